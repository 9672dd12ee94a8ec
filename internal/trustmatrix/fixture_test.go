package trustmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// server is one shared nats-server process, a client of it and what every
// client published on it (a subscription on ">").
type server struct {
	proc *natsproc.Server
	nc   *nats.Conn
	js   jetstream.JetStream

	mu   sync.Mutex
	seen []string // subjects, in the order received
}

func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{proc: natsproc.Start(t, natsproc.Options{})}
	nc, err := nats.Connect(s.proc.URL(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		if strings.HasPrefix(m.Reply, "$JS.ACK.") {
			return // a message JetStream delivers (to an inbox, under its own subject): no one published it now
		}
		s.mu.Lock()
		s.seen = append(s.seen, m.Subject)
		s.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	s.nc = nc
	return s
}

// mark is a point in what the server's clients published.
func (s *server) mark() int {
	if err := s.nc.Flush(); err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// since returns the subjects published after mark m that contain tok.
func (s *server) since(m int, tok string) []string {
	_ = s.nc.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, subj := range s.seen[m:] {
		if strings.Contains(subj, tok) {
			out = append(out, subj)
		}
	}
	return out
}

// cell is one command × fault on streams of its own: S<tok> (consumers c
// and d) and whatever its row adds, named with tok.
type cell struct {
	t    *testing.T
	srv  *server
	js   jetstream.JetStream
	tok  string
	home string
	// S is the cell's stream; C the consumer the record is about, D the
	// other consumer (of the same shape) of S.
	S, C, D string
	// bucket and key are the KV record the row reads (set by the row's
	// record step); other is the same record made for D.
	bucket, key, otherKey string
	// file is a recorded file (a plan), when the row reads one.
	file string
	// vals holds what a row's record step wants its check to know (and
	// "fault", the cell's).
	vals map[string]string
	// before and after are the states around the run.
	before, after state
}

func (c *cell) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c.t.Cleanup(cancel)
	return ctx
}

// result is one jsctl run.
type result struct {
	args           []string
	code           int
	stdout, stderr string
	published      []string // subjects with the cell's token
}

func (r result) String() string {
	return fmt.Sprintf("jsctl %s: exit %d\nstdout:\n%s\nstderr:\n%s\npublished: %v", strings.Join(r.args, " "), r.code, r.stdout, r.stderr, r.published)
}

// jsctlBin is the jsctl the cells run.
func jsctlBin() string {
	if bin := os.Getenv(jsctlBinEnv); bin != "" {
		return bin
	}
	return os.Args[0]
}

// environ is a clean environment for jsctl against the cell's server.
func (c *cell) environ() []string {
	var environ []string
	race := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GORACE="):
			race = strings.TrimPrefix(kv, "GORACE=") + " " + race
		case !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "JSCTL_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME="):
			environ = append(environ, kv)
		}
	}
	return append(environ, jsctlEnv+"=1", "GORACE="+race, "NATS_URL="+c.srv.proc.URL(), "HOME="+c.home,
		"XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"), "JSCTL_TZ=UTC")
}

// runLimit bounds one jsctl run.
const runLimit = 60 * time.Second

// run runs jsctl to the end, with a clean environment against the cell's
// server.
func (c *cell) run(args ...string) result {
	c.t.Helper()
	// A run that does not end is a hang: ended after runLimit, and the
	// cell fails with what it printed.
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, jsctlBin(), args...)
	cmd.Env = c.environ()
	cmd.Dir = c.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	m := c.srv.mark()
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("run jsctl %v: %v", args, err)
	}
	if ctx.Err() != nil {
		c.t.Fatalf("jsctl %s did not end in %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), runLimit, out.String(), errb.String())
	}
	return result{args: args, code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), published: c.srv.since(m, c.tok)}
}

// must runs jsctl and fails the cell unless it exits 0.
func (c *cell) must(args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("record step failed: %s", r)
	}
	return r
}

// stream creates stream name with subjects name.> and n messages
// (payload and Nats-Msg-Id prefix-1..n).
func (c *cell) stream(name string, n int, prefix string) {
	c.t.Helper()
	if _, err := c.js.CreateStream(c.ctx(), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}}); err != nil {
		c.t.Fatalf("create stream %s: %v", name, err)
	}
	c.publish(name, n, prefix)
}

func (c *cell) publish(stream string, n int, prefix string) {
	c.t.Helper()
	c.publishFrom(stream, 1, n, prefix)
}

// publishFrom publishes prefix-from..to to stream.
func (c *cell) publishFrom(stream string, from, to int, prefix string) {
	c.t.Helper()
	for i := from; i <= to; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		m := nats.NewMsg(strings.ToLower(stream) + ".a")
		m.Data = []byte(id)
		m.Header.Set(nats.MsgIdHdr, id)
		if _, err := c.js.PublishMsg(c.ctx(), m); err != nil {
			c.t.Fatal(err)
		}
	}
}

// consumer creates a durable pull consumer of stream with explicit acks.
func (c *cell) consumer(stream, name string) {
	c.t.Helper()
	if _, err := c.js.CreateConsumer(c.ctx(), stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}); err != nil {
		c.t.Fatalf("create consumer %s/%s: %v", stream, name, err)
	}
}

// ack fetches and acknowledges n messages of stream's consumer name.
func (c *cell) ack(stream, name string, n int) {
	c.t.Helper()
	cons, err := c.js.Consumer(c.ctx(), stream, name)
	if err != nil {
		c.t.Fatal(err)
	}
	for got := 0; got < n; {
		b, err := cons.Fetch(n-got, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			c.t.Fatal(err)
		}
		k := 0
		for m := range b.Messages() {
			if err := m.DoubleAck(c.ctx()); err != nil {
				c.t.Fatal(err)
			}
			k++
		}
		if k == 0 {
			c.t.Fatalf("%s/%s delivered %d of %d messages", stream, name, got, n)
		}
		got += k
	}
}

// info is a consumer's info, nil when it does not exist.
func (c *cell) info(stream, name string) *jetstream.ConsumerInfo {
	c.t.Helper()
	cons, err := c.js.Consumer(c.ctx(), stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return cons.CachedInfo()
}

// kvPut writes val at key of bucket.
func (c *cell) kvPut(bucket, key string, val []byte) {
	c.t.Helper()
	kv, err := c.js.KeyValue(c.ctx(), bucket)
	if err != nil {
		c.t.Fatalf("bucket %s: %v", bucket, err)
	}
	if _, err := kv.Put(c.ctx(), key, val); err != nil {
		c.t.Fatal(err)
	}
}

// kvGet reads key of bucket (nil when it is not there).
func (c *cell) kvGet(bucket, key string) []byte {
	c.t.Helper()
	kv, err := c.js.KeyValue(c.ctx(), bucket)
	if err != nil {
		c.t.Fatalf("bucket %s: %v", bucket, err)
	}
	e, err := kv.Get(c.ctx(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return e.Value()
}

// kvKeys lists the keys of bucket that contain part.
func (c *cell) kvKeys(bucket, part string) []string {
	c.t.Helper()
	kv, err := c.js.KeyValue(c.ctx(), bucket)
	if err != nil {
		c.t.Fatalf("bucket %s: %v", bucket, err)
	}
	l, err := kv.ListKeys(c.ctx())
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for k := range l.Keys() {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}

// editJSON decodes val, lets edit change it and encodes it again.
func (c *cell) editJSON(val []byte, edit func(m map[string]any)) []byte {
	c.t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(val))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		c.t.Fatalf("record %q: %v", val, err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// state is what a cell compares before and after a run: every consumer
// of the cell's streams (configuration, creation, positions) and each
// stream's creation and last sequence.
type state map[string]string

func (c *cell) state(streams ...string) state {
	c.t.Helper()
	st := state{}
	for _, sn := range streams {
		s, err := c.js.Stream(c.ctx(), sn)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st[sn] = "missing"
			continue
		}
		if err != nil {
			c.t.Fatal(err)
		}
		si := s.CachedInfo()
		st[sn] = fmt.Sprintf("created %s, last %d, msgs %d", si.Created.UTC().Format(time.RFC3339Nano), si.State.LastSeq, si.State.Msgs)
		l := s.ListConsumers(c.ctx())
		for ci := range l.Info() {
			cfg := ci.Config
			cfg.PauseUntil = nil
			for k := range cfg.Metadata {
				if strings.HasPrefix(k, "_nats.") {
					delete(cfg.Metadata, k) // the server's own (API level), not the consumer's configuration
				}
			}
			b, _ := json.Marshal(cfg)
			st[sn+"/"+ci.Name] = fmt.Sprintf("created %s, delivered %d, ack floor %d, paused %v, config %s",
				ci.Created.UTC().Format(time.RFC3339Nano), ci.Delivered.Stream, ci.AckFloor.Stream, ci.Paused, b)
		}
		if err := l.Err(); err != nil {
			c.t.Fatal(err)
		}
	}
	return st
}

// diff lists what changed between two states.
func (a state) diff(b state) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: (none) -> %s", k, v))
		}
	}
	return out
}

// waitMsgs waits (bounded) for stream to hold n messages.
func (c *cell) waitMsgs(stream string, n uint64) {
	c.t.Helper()
	testserver.WaitFor(c.t, time.Minute, fmt.Sprintf("%s to hold %d messages", stream, n), func() bool {
		s, err := c.js.Stream(c.ctx(), stream)
		return err == nil && s.CachedInfo().State.Msgs == n
	})
}
