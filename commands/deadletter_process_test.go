package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsctl consume processes with --dead-letter are killed (SIGKILL) at random
// moments and started again. Every third message always fails; the
// consumer allows 4 deliveries and consume ends a message after 3 failures,
// so both the failure bound and the last allowed delivery end messages
// (after a kill the failure count of a message can start again, so some
// reach the consumer's last delivery: the watch and sweep path). In the
// end every message is settled exactly once: the good ones done (or, when
// their allowed deliveries ran out without an outcome, dead-lettered with
// a reason saying so: a kill cuts the deliveries in flight, and each
// redelivery that finds a killed run's claim backs off, using one), each
// failing one dead-lettered exactly once, never lost, never twice, and no
// dead letter left pending.
func TestDeadLettersSurviveSIGKILL(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	if testing.Short() {
		t.Skip("kills jsctl processes repeatedly")
	}
	const n, kills = 120, 12
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 3*time.Minute)
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "ORDERS", Subjects: []string{"orders.>"}},
		{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= n; i++ {
		m := nats.NewMsg("orders.eu")
		m.Data = fmt.Appendf(nil, "order %d", i)
		m.Header.Set("Order-Id", fmt.Sprintf("o-%d", i))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second, MaxDeliver: 4, MaxAckPending: 1000,
	}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "runs.log")
	handler := `echo "$JSCTL_SEQ" >> "$HANDLER_LOG"; sleep 0.0$(( JSCTL_SEQ % 5 )); test $(( JSCTL_SEQ % 3 )) != 0`
	runs := 0
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		runs++
		cmd := exec.Command(bin, append([]string{"consume", "ORDERS", "c", "--exec", handler, "--json", "--key-header", "Order-Id",
			"--dead-letter", "dead.orders", "--max-failures", "3", "--workers", "2", "--lease", "2s", "--retry-delay", "100ms"}, args...)...)
		cmd.Env = append(os.Environ(), "NATS_URL="+s.ClientURL(), "HANDLER_LOG="+log, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testserver.KillAtEnd(t, cmd)
		return cmd, &out
	}
	// Kill at random moments while messages are being handled, failed and
	// dead-lettered.
	for k := 0; k < kills; k++ {
		cmd, _ := start()
		time.Sleep(time.Duration(100+rand.IntN(700)) * time.Millisecond) // the fault: a kill at a random moment
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	// Runs to the end: until every message is settled and no dead letter
	// is pending (claims of killed runs run out, messages on their last
	// delivery are swept).
	var swept, lastDeliveryNotes int
	var lastOut string
	deadline := time.Now().Add(2 * time.Minute)
	for !func() bool {
		cmd, out := start("--idle", "3s")
		defer func() { lastOut = out.String() }()
		if err := cmd.Wait(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("final run: %v\n%s", err, out)
			}
		}
		for _, line := range strings.Split(out.String(), "\n") {
			var sum consumeSummaryLine
			if json.Unmarshal([]byte(line), &sum) == nil && sum.Summary != nil {
				swept += sum.Summary.DeadLettered
				for _, w := range sum.Summary.Warnings {
					if strings.Contains(w, "last allowed delivery ended without an outcome") {
						lastDeliveryNotes++
					}
				}
			}
		}
		return settled(t, ctx, js, n, false)
	}() {
		if time.Now().After(deadline) {
			settled(t, ctx, js, n, true)
			t.Fatalf("not settled after 2 minutes; the last run said:\n%s", lastOut)
		}
	}

	// The dead-letter stream, read as a plain client reads it.
	dead := deadLetters(t, ctx, js)
	st, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[uint64]acks.Record{}
	for _, r := range recs {
		bySeq[r.Seq] = r
	}
	var twice, lost, goodDead []uint64
	poison := 0
	for seq := uint64(1); seq <= n; seq++ {
		r, dl := bySeq[seq], dead[seq]
		if len(dl) > 1 {
			twice = append(twice, seq)
		}
		switch {
		case seq%3 == 0:
			poison++
			if len(dl) == 0 || r.State != acks.StateFailed || r.DeadLetter == nil || r.DeadLetter.Pending {
				lost = append(lost, seq)
			} else if dl[0].seq != r.DeadLetter.Seq {
				t.Errorf("message %d: its record names dead letter %d, the stream holds %d", seq, r.DeadLetter.Seq, dl[0].seq)
			}
			if len(dl) > 0 && string(dl[0].data) != fmt.Sprintf("order %d", seq) {
				t.Errorf("message %d: dead letter payload %q", seq, dl[0].data)
			}
		case r.State == acks.StateDone:
			if len(dl) != 0 {
				t.Errorf("message %d is done and was dead-lettered", seq)
			}
		case len(dl) == 1 && r.DeadLetter != nil && strings.Contains(r.Reason, "ended without an outcome"):
			goodDead = append(goodDead, seq) // every allowed delivery of it was cut by a kill
		default:
			lost = append(lost, seq)
			t.Errorf("message %d: record %+v, %d dead letters", seq, r, len(dl))
		}
	}
	t.Logf("%d jsctl processes killed (kill -9) at random moments, %d runs in all; %d messages, %d that always fail",
		kills, runs, n, poison)
	t.Logf("dead letters: %d in the stream; dead-lettered twice: %d %v; lost (failing, not dead-lettered): %d %v",
		countDead(dead), len(twice), twice, len(lost), lost)
	t.Logf("after the kills the final runs published %d dead letters (%d by sweeps of last deliveries); good messages dead-lettered because their allowed deliveries ran out without an outcome (cut by kills, or backing off from a killed run's claim): %d %v",
		swept, lastDeliveryNotes, len(goodDead), goodDead)
	if len(twice) != 0 || len(lost) != 0 {
		t.Fatalf("%d dead-lettered twice, %d lost", len(twice), len(lost))
	}
}

// consumeSummaryLine is consume's last --json line.
type consumeSummaryLine struct {
	Summary *struct {
		DeadLettered int      `json:"dead_lettered"`
		Warnings     []string `json:"warnings"`
	} `json:"summary"`
}

// settled reports whether every message of scope ORDERS.c has a done
// record or a final failed one whose dead letter is published, with no
// dead-letter watch left.
func settled(t *testing.T, ctx context.Context, js jetstream.JetStream, n int, explain bool) bool {
	t.Helper()
	st, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
	if err != nil {
		return false
	}
	recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, r := range recs {
		if r.State == acks.StateDone || (r.Final && r.DeadLetter != nil && !r.DeadLetter.Pending) {
			ok++
		} else if explain {
			t.Logf("unsettled record: %+v dead letter %+v", r, r.DeadLetter)
		}
	}
	if explain {
		t.Logf("%d records, %d settled, %d messages", len(recs), ok, n)
	}
	if ok != n && !explain {
		return false
	}
	keys, err := st.KV().ListKeysFiltered(ctx, "d.>")
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for k := range keys.Keys() {
		left++
		if explain {
			e, _ := st.KV().Get(ctx, k)
			if e != nil {
				t.Logf("watch %s: %s (written %v)", k, e.Value(), e.Created())
			}
		}
	}
	return left == 0 && ok == n
}

type deadLetter struct {
	seq  uint64
	data []byte
}

// deadLetters reads stream DEAD and groups its messages by the original
// sequence (Jsctl-Sequence).
func deadLetters(t *testing.T, ctx context.Context, js jetstream.JetStream) map[uint64][]deadLetter {
	t.Helper()
	s, err := js.Stream(ctx, "DEAD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]deadLetter{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		orig, err := strconv.ParseUint(m.Header.Get(acks.DeadLetterSeqHdr), 10, 64)
		if err != nil || m.Header.Get(acks.DeadLetterStreamHdr) != "ORDERS" || m.Header.Get("Jsctl-Original-Nats-Msg-Id") != "" ||
			m.Header.Get("Order-Id") != fmt.Sprintf("o-%d", orig) || m.Header.Get(acks.DeadLetterErrorHdr) == "" {
			t.Errorf("dead letter %d: headers %v", seq, m.Header)
		}
		out[orig] = append(out[orig], deadLetter{seq: seq, data: m.Data})
	}
	return out
}

func countDead(d map[uint64][]deadLetter) int {
	n := 0
	keys := make([]uint64, 0, len(d))
	for k, v := range d {
		n += len(v)
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return n
}
