package acks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// Finding 5: a failed record naming a pending dead letter is data, not an
// instruction. Before, a hand-written record for message 2 naming
// $JS.API.STREAM.DELETE.VICTIM made a run without --dead-letter publish
// there (the stream was deleted) on every delivery. Now a dead letter goes
// only to the run's own --dead-letter subject: a record naming another is
// reported, nothing is published, and the record is left pending (for
// acks retry, which checks it too).
func TestRecordedDeadLetterSubjectIsNotAnInstruction(t *testing.T) {
	for _, tc := range []struct {
		name, subject, own string
	}{
		{"server API, no --dead-letter", "$JS.API.STREAM.DELETE.VICTIM", ""},
		{"server API, own --dead-letter", "$JS.API.STREAM.DELETE.VICTIM", "dead.orders"},
		{"another subject", "dead.elsewhere", "dead.orders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := testCtx(t, 30*time.Second)
			addDeadStream(t, f.js)
			if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "VICTIM", Subjects: []string{"victim.>"}}); err != nil {
				t.Fatal(err)
			}
			seen, err := f.js.Conn().SubscribeSync(">")
			if err != nil {
				t.Fatal(err)
			}
			publish(t, f.js, "orders", 1, 2)
			forged := `{"s":"failed","q":2,"t":true,"n":1,"r":"boom","ls":"` + tc.subject + `","li":"jsctl-dl:x:1:1"}`
			if _, err := f.st.KV().Put(ctx, "r.ORDERS.c.s2", []byte(forged)); err != nil {
				t.Fatal(err)
			}
			cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
			var opts []acks.ProcessOption
			if tc.own != "" {
				opts = append(opts, acks.WithDeadLetter(tc.own))
			}
			var res acks.Result
			for i := 0; i < 2; i++ {
				res, _ = f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return nil }, opts...)
			}
			if res.Seq != 2 || res.Action != acks.Failed || !strings.Contains(res.DeadLetterRefused, tc.subject) {
				t.Fatalf("message 2: %+v", res)
			}
			t.Logf("refused: %s", res.DeadLetterRefused)
			if err := f.js.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			for {
				m, err := seen.NextMsg(0)
				if err != nil {
					break
				}
				if m.Subject == tc.subject || strings.HasPrefix(m.Subject, "dead.") {
					t.Errorf("published to %q", m.Subject)
				}
			}
			if _, err := f.js.Stream(ctx, "VICTIM"); err != nil {
				t.Errorf("stream VICTIM: %v", err)
			}
			r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2")
			if err != nil || r.DeadLetter == nil || !r.DeadLetter.Pending || r.DeadLetter.Subject != tc.subject {
				t.Fatalf("the record is no longer as it was: %+v %v", r, err)
			}
		})
	}
}

// Finding 6: a claim without a server TTL (written by hand) whose recorded
// lease is long past is expired: the message runs. One whose lease lies in
// 2100 is reported, deferred, and --idle still ends the run (before, 159
// busy deliveries in 40s and the run never ended).
func TestRecordedClaimLeaseIsJudged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		expires   int64
		processed int
		warn      string
	}{
		{"lease in 2001", 1000000000000000000, 1, "lease ran out at 2001-09-09"},
		{"lease in 2100", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), 0, "implausibly far ahead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := testCtx(t, 30*time.Second)
			publish(t, f.js, "orders", 1, 1)
			forged := fmt.Sprintf(`{"s":"claim","q":1,"x":%d,"w":"ghost"}`, tc.expires)
			if _, err := f.st.KV().Put(ctx, "r.ORDERS.c.s1", []byte(forged)); err != nil {
				t.Fatal(err)
			}
			cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
			tl := newTally()
			sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithIdle(time.Second), acks.WithBusyDelay(100*time.Millisecond))
			if err != nil || ctx.Err() != nil {
				t.Fatalf("consume did not end by --idle: %v %v", err, ctx.Err())
			}
			t.Logf("processed %d, busy %d, warnings %q", sum.Processed, sum.Busy, sum.Warnings)
			if sum.Processed != tc.processed || len(tl.snapshot()) != tc.processed || !hasWarning(sum.Warnings, "r.ORDERS.c.s1", tc.warn) {
				t.Fatalf("%+v", sum)
			}
		})
	}
}
