package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replicas is an origin stream ORDERS (orders.eu and orders.us messages)
// and the streams that replicate it, seen by a plain nats.go client on
// each side, with jsctl run as a process against the origin.
type replicas struct {
	t    *testing.T
	rng  *rand.Rand
	home string
	// originURL is the origin's server; ojs a client of it.
	originURL string
	onc       *nats.Conn
	ojs       jetstream.JetStream
	// tnc and tjs reach the targets (the same server, or a leaf node).
	tnc *nats.Conn
	tjs jetstream.JetStream
	// to are the jsctl flags that reach the targets from the origin's
	// connection (none, or --to-js-domain); toGlobal are the global flags
	// of a jsctl run on the targets' side (consumer recover).
	to, toGlobal []string
	// apiPrefix is the targets' JetStream API prefix, as requests to them
	// are sent from the origin's server.
	apiPrefix string
	// msgs are the origin's messages: subject by sequence (index seq-1).
	msgs []string
	// consumers counts the origin consumers made, for unique names.
	consumers int
	// filters are the origin consumers' filters, when the origin cannot
	// be asked.
	filters map[string]string
	f       replicaFigures
}

// replicaFigures are what the replica tests count.
type replicaFigures struct {
	positions, exact, byTime, refused, wrong int
	kills, interrupted, lost                 int
}

// target is a stream that replicates ORDERS and what it holds of it.
type target struct {
	stream string
	mirror bool
	// holds says whether the target receives the origin's messages on a
	// subject; subject is the subject it stores them under.
	holds   func(subject string) bool
	subject func(subject string) string
	// filters are the filters origin consumers copied to it may have.
	filters []string
}

func all(string) bool      { return true }
func same(s string) string { return s }
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connectJS(t *testing.T, url, domain string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var js jetstream.JetStream
	if domain != "" {
		js, err = jetstream.NewWithDomain(nc, domain)
	} else {
		js, err = jetstream.New(nc)
	}
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// publish adds n messages to ORDERS, orders.eu or orders.us at random, the
// last ten alternating (so every filter has a message near the end); with
// other, a message on other.x goes to OTHER between some of them.
func (r *replicas) publish(n int, other bool) {
	r.t.Helper()
	ctx := ctxFor(r.t)
	for i := 0; i < n; i++ {
		subject := "orders.eu"
		if (i >= n-10 && i%2 == 1) || (i < n-10 && r.rng.IntN(3) == 0) {
			subject = "orders.us"
		}
		if _, err := r.ojs.Publish(ctx, subject, fmt.Appendf(nil, "order %d", len(r.msgs)+1)); err != nil {
			r.t.Fatal(err)
		}
		r.msgs = append(r.msgs, subject)
		if other && r.rng.IntN(2) == 0 {
			if _, err := r.ojs.Publish(ctx, "other.x", []byte("other")); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// waitHolds waits until stream holds n messages (a bounded poll).
func (r *replicas) waitHolds(stream string, n uint64) {
	r.t.Helper()
	testserver.WaitFor(r.t, time.Minute, fmt.Sprintf("stream %s to hold %d messages", stream, n), func() bool {
		s, err := r.tjs.Stream(ctxFor(r.t), stream)
		return err == nil && s.CachedInfo().State.Msgs == n
	})
}

// count is how many origin messages tg holds.
func (r *replicas) count(tg target) uint64 {
	n := uint64(0)
	for _, s := range r.msgs {
		if tg.holds(s) {
			n++
		}
	}
	return n
}

// jsctl runs jsctl against the origin and returns its exit code and output.
func (r *replicas) jsctl(args ...string) (int, string, string) {
	r.t.Helper()
	cmd := jsctlCommand(r.originURL, r.home, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		r.t.Fatalf("run jsctl %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// originConsumer creates a durable consumer of ORDERS with a filter from
// filters at a random ack floor below end (some with deliveries past it)
// and returns its name and the first origin sequence it had not finished.
func (r *replicas) originConsumer(filters []string, end int) (string, uint64) {
	return r.originConsumerAt(filters, 1+uint64(r.rng.IntN(end)), r.rng.IntN(3) == 0)
}

// originConsumerAt creates it starting at start; with fetch, it fetches
// three messages and acknowledges the first.
func (r *replicas) originConsumerAt(filters []string, start uint64, fetch bool) (string, uint64) {
	r.t.Helper()
	ctx := ctxFor(r.t)
	r.consumers++
	name := fmt.Sprintf("c%03d", r.consumers)
	cfg := jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		Description: "copied " + name, MaxDeliver: 7, Metadata: map[string]string{"team": "billing"},
	}
	if f := filters[r.rng.IntN(len(filters))]; f != "" {
		cfg.FilterSubject = f
	}
	c, err := r.ojs.CreateConsumer(ctx, "ORDERS", cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	if fetch { // deliveries past the ack floor: one acked, two not
		b, err := c.Fetch(3, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			r.t.Fatal(err)
		}
		first := true
		for m := range b.Messages() {
			if first {
				if err := m.DoubleAck(ctx); err != nil {
					r.t.Fatal(err)
				}
			}
			first = false
		}
	}
	ci, err := c.Info(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return name, ci.AckFloor.Stream + 1
}

// copyDoc is the part of consumer copy --json the tests read.
type copyDoc struct {
	Copies  []copyEntry `json:"copies"`
	Changes struct {
		Changes []struct {
			Consumer string `json:"consumer"`
			Verified bool   `json:"verified"`
		} `json:"changes"`
	} `json:"changes"`
}

type copyEntry struct {
	Consumer    string `json:"consumer"`
	OriginSeq   uint64 `json:"origin_sequence"`
	Translation struct {
		Method   string `json:"method"`
		Exact    bool   `json:"exact"`
		Behind   uint64 `json:"behind"`
		Requests int    `json:"requests"`
	} `json:"translation"`
}

// expected is the first origin message at or after seq that a consumer
// with filter takes and tg holds: its sequence and subject (0 when none).
func (r *replicas) expected(tg target, filter string, seq uint64) (uint64, string) {
	for s := seq; s <= uint64(len(r.msgs)); s++ {
		subj := r.msgs[s-1]
		if (filter == "" || filter == subj) && tg.holds(subj) {
			return s, subj
		}
	}
	return 0, ""
}

// first fetches the first message a copy on tg delivers and returns the
// origin sequence it came from (the same sequence on a mirror, else from
// its Nats-Stream-Source header) and its subject.
func (r *replicas) first(tg target, name string) (uint64, string) {
	r.t.Helper()
	ctx := ctxFor(r.t)
	c, err := r.tjs.Consumer(ctx, tg.stream, name)
	if err != nil {
		r.t.Fatalf("copy %s on %s: %v", name, tg.stream, err)
	}
	b, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	m, ok := <-b.Messages()
	if !ok {
		r.t.Fatalf("copy %s on %s delivered nothing within 10s (%v)", name, tg.stream, b.Error())
	}
	_ = m.Nak()
	if tg.mirror {
		md, err := m.Metadata()
		if err != nil {
			r.t.Fatal(err)
		}
		return md.Sequence.Stream, m.Subject()
	}
	f := strings.Fields(m.Headers().Get("Nats-Stream-Source"))
	if len(f) < 2 || f[0] != "ORDERS" {
		r.t.Fatalf("copy %s on %s delivered a message not from ORDERS: header %q", name, tg.stream, m.Headers().Get("Nats-Stream-Source"))
	}
	seq, _ := strconv.ParseUint(f[1], 10, 64)
	return seq, m.Subject()
}

// filterOf is a consumer's filter on the origin.
func (r *replicas) filterOf(name string) string {
	if f, ok := r.filters[name]; ok {
		return f
	}
	c, err := r.ojs.Consumer(ctxFor(r.t), "ORDERS", name)
	if err != nil {
		r.t.Fatal(err)
	}
	return c.CachedInfo().Config.FilterSubject
}

// check compares the first message each copy on tg delivers with the
// origin message it must come from, and counts the translations.
func (r *replicas) check(tg target, doc copyDoc, want map[string]uint64) {
	r.t.Helper()
	for _, cp := range doc.Copies {
		r.f.positions++
		if cp.Translation.Exact {
			r.f.exact++
		} else {
			r.f.byTime++
		}
		from := want[cp.Consumer]
		if cp.OriginSeq != from {
			r.t.Errorf("copy %s: origin sequence %d in the plan, want %d", cp.Consumer, cp.OriginSeq, from)
		}
		filter := r.filterOf(cp.Consumer)
		seq, subj := r.expected(tg, filter, from)
		gotSeq, gotSubj := r.first(tg, cp.Consumer)
		if gotSeq != seq || gotSubj != tg.subject(subj) {
			r.f.wrong++
			r.t.Errorf("copy %s on %s (filter %q, origin ack floor + 1 = %d): first delivers origin %d %s, want %d %s",
				cp.Consumer, tg.stream, filter, from, gotSeq, gotSubj, seq, tg.subject(subj))
		}
	}
	for _, c := range doc.Changes.Changes {
		if !c.Verified {
			r.t.Errorf("copy %s on %s not verified", c.Consumer, tg.stream)
		}
	}
}

// rounds copies n consumers at a time to tg, rounds times, and checks each.
func (r *replicas) rounds(tg target, rounds, n int) {
	r.t.Helper()
	for i := 0; i < rounds; i++ {
		want := map[string]uint64{}
		var names []string
		for j := 0; j < n; j++ {
			name, from := r.originConsumer(tg.filters, len(r.msgs)-12)
			want[name] = from
			names = append(names, name)
		}
		args := append(append([]string{"consumer", "copy", "ORDERS"}, names...), "--to-stream", tg.stream, "--execute", "--json")
		code, out, errs := r.jsctl(append(args, r.to...)...)
		if code != 0 {
			r.t.Fatalf("consumer copy to %s exited %d:\n%s\n%s", tg.stream, code, out, errs)
		}
		var doc copyDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			r.t.Fatalf("consumer copy --json: %v\n%s", err, out)
		}
		r.check(tg, doc, want)
	}
}

// refusesLag checks that a copy to tg, which has not received the
// origin's last cut messages, is refused with exit 5 naming how far behind
// it is, and planned with --allow-lag.
func (r *replicas) refusesLag(tg target, cut int, to ...string) {
	r.t.Helper()
	copied := uint64(len(r.msgs) - cut)
	// Its position is past what the target holds.
	start := copied + uint64(cut/2)
	name, _ := r.originConsumerAt([]string{""}, start, false)
	args := append([]string{"consumer", "copy", "ORDERS", name, "--to-stream", tg.stream}, to...)
	code, out, errs := r.jsctl(append(args, "--execute")...)
	want := fmt.Sprintf("has not yet received \"ORDERS\"'s sequence %d: it is %d messages behind (it has copied up to sequence %d; the origin is at %d)", start, start-copied, copied, len(r.msgs))
	if code != 5 || !strings.Contains(errs, want) {
		r.t.Fatalf("copy to a lagging %s: exit %d, want 5 and %q:\n%s\n%s", tg.stream, code, want, out, errs)
	}
	r.f.refused++
	code, out, errs = r.jsctl(append(args, "--allow-lag", "--json")...)
	var doc copyDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Copies) != 1 || doc.Copies[0].Translation.Behind != start-copied {
		r.t.Fatalf("copy --allow-lag (plan) to a lagging %s: exit %d, want 0 and behind %d:\n%s\n%s", tg.stream, code, start-copied, out, errs)
	}
}

// killCopies kills jsctl (kill -9) at a random consumer change request
// on tg during copies of n new consumers, runs consumer recover on the
// target's side, and then a whole copy: no consumer may be lost, no
// intent record left, and each copy must deliver first the right message.
func (r *replicas) killCopies(tg target, tries, n int) {
	r.t.Helper()
	for try := 0; try < tries; try++ {
		want := map[string]uint64{}
		var names []string
		for j := 0; j < n; j++ {
			name, from := r.originConsumer(tg.filters, len(r.msgs)-12)
			want[name] = from
			names = append(names, name)
		}
		args := append(append(append([]string{"consumer", "copy", "ORDERS"}, names...), "--to-stream", tg.stream, "--execute"), r.to...)
		at := int64(1 + r.rng.IntN(2*n))
		var seen atomic.Int64
		fire := make(chan struct{})
		sub, err := r.onc.Subscribe(r.apiPrefix+".CONSUMER.>", func(m *nats.Msg) {
			if changesTarget(strings.TrimPrefix(m.Subject, r.apiPrefix+"."), tg.stream) && seen.Add(1) == at {
				close(fire)
			}
		})
		if err != nil {
			r.t.Fatal(err)
		}
		if err := r.onc.Flush(); err != nil {
			r.t.Fatal(err)
		}
		cmd := jsctlCommand(r.originURL, r.home, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			r.t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-fire:
			_ = cmd.Process.Kill()
			r.f.kills++
		case <-done:
		}
		<-done
		_ = sub.Unsubscribe()
		rargs := append(append([]string{}, r.toGlobal...), "consumer", "recover", tg.stream, "--execute", "--json")
		code, rout, errs := r.jsctl(rargs...)
		if code != 0 {
			r.t.Fatalf("try %d: consumer recover on %s exited %d:\n%s\n%s\nkilled run:\n%s", try, tg.stream, code, rout, errs, out.String())
		}
		var rec struct {
			Changes []json.RawMessage `json:"changes"`
		}
		if err := json.Unmarshal([]byte(rout), &rec); err != nil {
			r.t.Fatalf("recover --json: %v\n%s", err, rout)
		}
		r.f.interrupted += len(rec.Changes)
		// A whole copy then makes every one, at the right place.
		code, cout, errs := r.jsctl(append(args, "--json")...)
		if code != 0 {
			r.t.Fatalf("try %d: a whole copy after recover exited %d:\n%s\n%s", try, code, cout, errs)
		}
		var doc copyDoc
		if err := json.Unmarshal([]byte(cout), &doc); err != nil {
			r.t.Fatalf("consumer copy --json: %v\n%s", err, cout)
		}
		for _, name := range names {
			if !slices.ContainsFunc(doc.Copies, func(c copyEntry) bool { return c.Consumer == name }) {
				r.f.lost++
				r.t.Errorf("try %d: consumer %s missing from the whole copy", try, name)
			}
		}
		r.check(tg, doc, want)
	}
}

// changesTarget says whether an API subject (without its prefix) creates,
// deletes or resets a consumer of stream, other than the temporary
// consumers a plan counts with.
func changesTarget(subject, stream string) bool {
	t := strings.Split(strings.TrimPrefix(subject, "CONSUMER."), ".")
	if len(t) >= 4 && t[0] == "DURABLE" && t[1] == "CREATE" {
		t = t[1:]
	}
	if len(t) < 3 || t[1] != stream || strings.HasPrefix(t[2], reset.TempPrefix) {
		return false
	}
	return t[0] == "CREATE" || t[0] == "DELETE" || t[0] == "RESET"
}
