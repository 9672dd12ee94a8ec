package acks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// failAll consumes n messages with a handler that always fails, each
// failing for good at once and dead-lettered to dead.orders; it returns
// the summary and the results' errors.
func failAll(t *testing.T, st *acks.Store, cons jetstream.Consumer, n int) (acks.Summary, []error) {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	sum, err := st.Consume(testCtx(t, 60*time.Second), cons, func(context.Context, acks.Delivery) error { return errors.New("boom") },
		acks.WithMaxMessages(n), acks.WithMaxFailures(1), acks.WithDeadLetter("dead.orders"), acks.WithRetryDelay(100*time.Millisecond),
		acks.OnResult(func(r acks.Result) {
			mu.Lock()
			errs = append(errs, r.Err)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	return sum, errs
}

// deadLetterOf reads the dead letter a record names.
func deadLetterOf(t *testing.T, js jetstream.JetStream, r acks.Record) *jetstream.RawStreamMsg {
	t.Helper()
	if r.DeadLetter == nil || r.DeadLetter.Pending {
		t.Fatalf("record of message %d names no published dead letter: %+v", r.Seq, r.DeadLetter)
	}
	st, err := js.Stream(testCtx(t, 10*time.Second), r.DeadLetter.Stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(testCtx(t, 10*time.Second), r.DeadLetter.Seq)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A bucket deleted and made again starts its revisions over: its dead
// letters must not take the IDs of the first bucket's, which the
// dead-letter stream still remembers (it would drop them as copies, and
// the records would name another consumer's dead letters).
func TestDeadLetterIDsAfterBucketRecreated(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 60*time.Second)
	addStream(t, js, "ORDERS", 1)
	addDeadStream(t, js)
	publish(t, js, "orders", 1, 3)
	for _, name := range []string{"c1", "c2"} {
		if name == "c2" {
			if err := js.DeleteKeyValue(ctx, "DLB"); err != nil {
				t.Fatal(err)
			}
		}
		st, err := acks.Open(ctx, js, acks.WithBucket("DLB"))
		if err != nil {
			t.Fatal(err)
		}
		sum, errs := failAll(t, st, addConsumer(t, js, "ORDERS", name, 30*time.Second), 3)
		if sum.DeadLettered != 3 || sum.Terminated != 3 {
			t.Fatalf("%s: %+v %v", name, sum, errs)
		}
		recs, err := st.List(ctx, acks.Filter{Scope: acks.DefaultScope("ORDERS", name)})
		if err != nil || len(recs) != 3 {
			t.Fatalf("%s: records %v %v", name, recs, err)
		}
		for _, r := range recs {
			m := deadLetterOf(t, js, r)
			if got := m.Header.Get(acks.DeadLetterConsumerHdr); got != name || m.Header.Get(acks.DeadLetterSeqHdr) != fmt.Sprint(r.Seq) {
				t.Errorf("%s: the record of message %d names dead letter %d, which is consumer %s's of message %s",
					name, r.Seq, r.DeadLetter.Seq, got, m.Header.Get(acks.DeadLetterSeqHdr))
			}
		}
	}
	if n := streamInfo(t, js, "DEAD").State.Msgs; n != 6 {
		t.Errorf("dead-letter stream holds %d messages, want 6", n)
	}
}

// setPending turns a dead-lettered record back into one whose dead letter
// is pending under id, as a run stopped between the publish and the
// record's update (or an earlier version) leaves it.
func setPending(t *testing.T, st *acks.Store, r acks.Record, id string) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	e, err := st.KV().Get(ctx, r.KVKey)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "lt")
	delete(v, "lq")
	v["li"] = id
	b, _ := json.Marshal(v)
	if _, err := st.KV().Update(ctx, r.KVKey, b, e.Revision()); err != nil {
		t.Fatal(err)
	}
}

// A publish answered "duplicate" is checked against the stored dead
// letter: the record's own (a re-publish after a crash) is taken, another
// message's under the same ID (an ID of an earlier version's form, reused
// after the bucket was made again) is refused and the dead letter stays
// pending, never naming the other message's.
func TestDeadLetterDuplicateChecked(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	addDeadStream(t, f.js)
	publish(t, f.js, "orders", 1, 2)
	sum, errs := failAll(t, f.st, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), 2)
	if sum.DeadLettered != 2 {
		t.Fatalf("%+v %v", sum, errs)
	}
	recs, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != 2 {
		t.Fatalf("records %v %v", recs, err)
	}
	own, other := recs[0], recs[1]
	if own.Seq != 1 {
		own, other = other, own
	}
	ownDL := own.DeadLetter.Seq
	// Message 1's dead letter is pending again under its own ID; message
	// 2's under an ID of the old form that another consumer's dead letter
	// (of message 9) already took.
	setPending(t, f.st, own, own.DeadLetter.ID)
	taken := nats.NewMsg("dead.orders")
	taken.Header.Set(nats.MsgIdHdr, "jsctl-dl:JSCTL_ACKS:7")
	taken.Header.Set(acks.DeadLetterStreamHdr, "ORDERS")
	taken.Header.Set(acks.DeadLetterConsumerHdr, "other")
	taken.Header.Set(acks.DeadLetterSeqHdr, "9")
	ack, err := f.js.PublishMsg(ctx, taken)
	if err != nil {
		t.Fatal(err)
	}
	setPending(t, f.st, other, "jsctl-dl:JSCTL_ACKS:7")

	// A replay delivers both again: each finds its pending dead letter and
	// publishes it.
	if err := f.js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	sum, errs = failAll(t, f.st, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), 2)
	if sum.DeadLettered != 1 || sum.Terminated != 1 {
		t.Errorf("replay: %+v %v", sum, errs)
	}
	found := false
	for _, e := range errs {
		if e != nil && strings.Contains(e.Error(), fmt.Sprintf(`stream "DEAD" already holds dead letter ID "jsctl-dl:JSCTL_ACKS:7" as its message %d, the dead letter of message 9 of stream "ORDERS"`, ack.Sequence)) {
			found = true
		}
	}
	if !found {
		t.Errorf("no error names the taken ID: %v", errs)
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || r.DeadLetter == nil || r.DeadLetter.Pending || r.DeadLetter.Seq != ownDL {
		t.Errorf("message 1: %+v %v, want its own dead letter %d", r.DeadLetter, err, ownDL)
	}
	r, err = f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2")
	if err != nil || r.DeadLetter == nil || !r.DeadLetter.Pending || r.DeadLetter.Seq != 0 {
		t.Errorf("message 2: %+v %v, want its dead letter still pending", r.DeadLetter, err)
	}
	if n := streamInfo(t, f.js, "DEAD").State.Msgs; n != 3 {
		t.Errorf("dead-letter stream holds %d messages, want 3", n)
	}
}
