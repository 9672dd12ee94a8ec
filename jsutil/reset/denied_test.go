package reset

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// deniedJS starts a server whose only user may publish anywhere except to
// the subjects in deny, and connects as that user.
func deniedJS(t *testing.T, deny ...string) jetstream.JetStream {
	t.Helper()
	s := testserver.Start(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "ops", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
		}}}
	})
	nc := testserver.Connect(t, s, nats.UserInfo("ops", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// allowOnlyJS starts a server whose only user may publish only to the
// subjects in allow, and connects as that user.
func allowOnlyJS(t *testing.T, allow ...string) jetstream.JetStream {
	t.Helper()
	s := testserver.Start(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "ops", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: allow},
		}}}
	})
	nc := testserver.Connect(t, s, nats.UserInfo("ops", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestHoldDenied: a user who may create only its own consumer recreates
// it on an interest stream. The create of the consumer that keeps interest
// meanwhile is denied: that is a permission denial (exit 7) naming the
// subject, not a timeout, and nothing changed.
func TestHoldDenied(t *testing.T) {
	js := allowOnlyJS(t,
		"$JS.API.INFO", "$JS.API.STREAM.>", "$JS.API.CONSUMER.INFO.>", "$JS.API.CONSUMER.DELETE.>",
		"$JS.API.CONSUMER.RESET.>", "$JS.API.CONSUMER.LIST.>", "$JS.API.CONSUMER.NAMES.>",
		"$JS.API.CONSUMER.CREATE.JOBS.w", "$JS.API.CONSUMER.CREATE.JOBS.w.>",
		"$JS.API.CONSUMER.CREATE.KV_"+IntentBucket+".>", "$JS.API.CONSUMER.MSG.NEXT.>", "$JS.API.DIRECT.GET.>",
		"$JS.ACK.>", "$JS.FC.>", "$KV.>", "jobs.>",
	)
	addStream(t, js, "JOBS", jetstream.InterestPolicy, 1)
	addConsumer(t, js, "JOBS", jetstream.ConsumerConfig{Durable: "w"})
	publish(t, js, "jobs.a", 10, 0)
	fetch(t, js, "JOBS", "w", 3)
	before := info(t, js, "JOBS", "w")
	opts := Options{Method: Recreate, Timeout: 500 * time.Millisecond}
	p := mustPlan(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, opts)
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrPermission) || errors.Is(err, jsutil.ErrConnection) ||
		!strings.Contains(err.Error(), `keep interest during the recreate (nothing changed): permission denied (publish to "$JS.API.CONSUMER.CREATE.JOBS.`+TempPrefix+`hold_`) {
		t.Fatalf("got %v, want a permission denial naming the holder's create", err)
	}
	after := info(t, js, "JOBS", "w")
	if !after.Created.Equal(before.Created) || after.AckFloor.Stream != 3 || p.Changes[0].Applied {
		t.Fatalf("consumer changed: %+v -> %+v", before, after)
	}
	if u := intentsOf(t, js, "JOBS", "w"); len(u) != 0 {
		t.Fatalf("intent left: %+v", u)
	}
}

// TestResetDeniedNeverEscalates: a user denied the consumer reset API gets
// a permission error; the consumer is not recreated (its deliver policy,
// position and creation time are unchanged) and no intent is left.
func TestResetDeniedNeverEscalates(t *testing.T) {
	js := deniedJS(t, "$JS.API.CONSUMER.RESET.>")
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	fetch(t, js, "ORDERS", "c", 6)
	before := info(t, js, "ORDERS", "c")
	opts := Options{Timeout: 500 * time.Millisecond}
	p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, opts)
	if p.Changes[0].Method != Reset {
		t.Fatalf("planned %s", p.Changes[0].Method)
	}
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), `permission denied (publish to "$JS.API.CONSUMER.RESET.ORDERS.c")`) ||
		!strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("got %v", err)
	}
	after := info(t, js, "ORDERS", "c")
	if after.Config.DeliverPolicy != jetstream.DeliverAllPolicy || !after.Created.Equal(before.Created) ||
		after.Delivered.Stream != 6 || after.AckFloor.Stream != 6 || p.Changes[0].Method != Reset || p.Changes[0].Applied {
		t.Fatalf("consumer changed: %+v -> %+v (%+v)", before, after, p.Changes[0])
	}
	if u := intentsOf(t, js, "ORDERS", "c"); len(u) != 0 {
		t.Fatalf("intent left: %+v", u)
	}
}

// TestDeniedDeleteChangesNothing: a recreate whose delete is denied stops
// there, with the consumer untouched.
func TestDeniedDeleteChangesNothing(t *testing.T) {
	js := deniedJS(t, "$JS.API.CONSUMER.DELETE.>")
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", rich("c"))
	before := configWithoutStart(t, js, "ORDERS", "c")
	opts := Options{Method: Recreate, Timeout: 500 * time.Millisecond}
	p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, opts)
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), "CONSUMER.DELETE.ORDERS.c") {
		t.Fatalf("got %v", err)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "c"))
	if u := intentsOf(t, js, "ORDERS", "c"); len(u) != 0 {
		t.Fatalf("intent left: %+v", u)
	}
}

// TestIntentBucketDenied: a user who may not use the intent bucket still
// gets a plan (saying the check was not possible), but no change: a change
// without its intent record is never made.
func TestIntentBucketDenied(t *testing.T) {
	js := deniedJS(t, "$JS.API.STREAM.INFO.KV_"+IntentBucket, "$JS.API.STREAM.CREATE.KV_"+IntentBucket)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	fetch(t, js, "ORDERS", "c", 6)
	opts := Options{Timeout: 300 * time.Millisecond}
	p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, opts)
	if w := p.Changes[0].Warnings; len(w) != 1 || !strings.Contains(w[0], "could not check for unfinished changes") {
		t.Fatalf("warnings %v", w)
	}
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), "write the intent record") || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("got %v", err)
	}
	if got := position(t, js, "ORDERS", "c"); got != [2]uint64{6, 6} {
		t.Fatalf("consumer moved to %v", got)
	}
}

// TestForcedResetWithLivePuller: a puller keeps taking messages while the
// consumer is reset under --force; the reset is verified from the server's
// reply, and what the puller took since is reported.
func TestForcedResetWithLivePuller(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 50, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "live"})
	cons, err := js.Consumer(testCtx(t), "ORDERS", "live")
	if err != nil {
		t.Fatal(err)
	}
	var took atomic.Int64
	cc, err := cons.Consume(func(m jetstream.Msg) {
		took.Add(1)
		_ = m.Ack()
	}, jetstream.PullMaxMessages(10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	testserver.WaitFor(t, 10*time.Second, "the puller caught up and waiting", func() bool {
		i := info(t, js, "ORDERS", "live")
		return i.AckFloor.Stream == 50 && i.NumWaiting > 0
	})
	opts := Options{Force: true}
	p := mustPlan(t, js, "ORDERS", []string{"live"}, Target{Kind: ToSeq, Seq: 10}, opts)
	if err := Execute(testCtx(t), js, p, opts); err != nil {
		t.Fatal(err)
	}
	c := p.Changes[0]
	if !c.Verified || c.proofKind != "reset reply" {
		t.Fatalf("not verified from the reset reply: %+v", c)
	}
	testserver.WaitFor(t, 10*time.Second, "the puller took the replay", func() bool { return took.Load() >= 91 })
	t.Logf("verified; delivered since: %d; warnings %v", c.DeliveredSince, c.Warnings)
}

// TestCountingOnWorkQueue: a forward plan on a work-queue stream counts
// what it skips without a raw server error: exactly with direct gets,
// else by sequence numbers with the limit said plainly.
func TestCountingOnWorkQueue(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			js := single(t)
			_, err := js.CreateStream(testCtx(t), jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"},
				Retention: jetstream.WorkQueuePolicy, AllowDirect: direct})
			if err != nil {
				t.Fatal(err)
			}
			addConsumer(t, js, "JOBS", jetstream.ConsumerConfig{Durable: "w", FilterSubject: "jobs.a"})
			for i := 0; i < 5; i++ {
				publish(t, js, "jobs.a", 1, 0)
				publish(t, js, "jobs.b", 1, 0)
			}
			p := mustPlan(t, js, "JOBS", []string{"w"}, Target{Kind: ToSeq, Seq: 7}, Options{Force: true})
			c := p.Changes[0]
			for _, w := range c.Warnings {
				if strings.Contains(w, "err_code") || strings.Contains(w, "10084") {
					t.Fatalf("raw server error in a warning: %q", w)
				}
			}
			// w has received nothing: the move forward skips what it never
			// received, and says so (exactly, or as the upper bound).
			if direct && (cnt(c.Skip) != 3 || cnt(c.NeverDelivered) != 3 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "skips 3 messages it never received")) {
				t.Fatalf("skip %d, never delivered %d, warnings %v; want exactly 3 and the forward-move warning alone", cnt(c.Skip), cnt(c.NeverDelivered), c.Warnings)
			}
			if last := c.Warnings[len(c.Warnings)-1]; !direct && (cnt(c.NeverDelivered) != 6 || !strings.Contains(last, "skips at most 6 messages it never received")) {
				t.Fatalf("never delivered %d, warnings %v; want the forward-move warning as an upper bound", cnt(c.NeverDelivered), c.Warnings)
			}
			if !direct && (cnt(c.Skip) != 6 || len(c.Warnings) == 0 || !strings.Contains(c.Warnings[0], "allow_direct")) {
				t.Fatalf("skip %d, warnings %v; want the upper bound 6, said plainly", cnt(c.Skip), c.Warnings)
			}
		})
	}
}

// TestTemporaryCountingConsumer: a counting consumer left behind (here
// because deleting it is denied) is recognisable and expires in seconds.
func TestTemporaryCountingConsumer(t *testing.T) {
	js := deniedJS(t, "$JS.API.CONSUMER.DELETE.>")
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "orders.us", 5, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c", FilterSubject: "orders.eu"})
	fetch(t, js, "ORDERS", "c", 4)
	mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, Options{Timeout: 300 * time.Millisecond})
	s, _ := js.Stream(testCtx(t), "ORDERS")
	l := s.ListConsumers(testCtx(t))
	temps := 0
	for ci := range l.Info() {
		if ci.Name == "c" {
			continue
		}
		temps++
		if !strings.HasPrefix(ci.Name, TempPrefix) || ci.Config.InactiveThreshold > 5*time.Second || ci.Config.InactiveThreshold <= 0 {
			t.Fatalf("temporary consumer %q, inactive threshold %s", ci.Name, ci.Config.InactiveThreshold)
		}
	}
	if temps == 0 {
		t.Fatal("no counting consumer left behind to look at")
	}
}

// TestAllConcurrentAndProgress: --all over many consumers plans and
// executes concurrently, keeps a sorted order, and reports progress.
func TestAllConcurrentAndProgress(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 20, 0)
	var names []string
	for i := 19; i >= 0; i-- {
		n := fmt.Sprintf("c%02d", i)
		names = append(names, n)
		addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: n})
	}
	slices.Sort(names)
	var calls [][2]int
	opts := Options{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }}
	p := mustRun(t, js, "ORDERS", nil, Target{Kind: ToSeq, Seq: 5}, opts)
	var got []string
	for _, c := range p.Changes {
		got = append(got, c.Consumer)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("order %v", got)
	}
	// Planning and executing each report 0..20 of 20, never going back.
	if len(calls) != 42 || calls[0] != [2]int{0, 20} || calls[20] != [2]int{20, 20} || calls[21] != [2]int{0, 20} || calls[41] != [2]int{20, 20} {
		t.Fatalf("progress calls %v", calls)
	}
	for i := 1; i < len(calls); i++ {
		if i != 21 && calls[i][0] != calls[i-1][0]+1 {
			t.Fatalf("progress went from %v to %v", calls[i-1], calls[i])
		}
	}
}

// TestServerDownMidRecreate stops the server between the delete and the
// create. Back within Settle, the same run finishes the change; gone for
// longer, the run fails naming the recover command, which then rebuilds
// the consumer.
func TestServerDownMidRecreate(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := s.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex // s is replaced by a restart on a timer
	ended := false    // the test is over: a restart on a timer that fires now must not start a server in a removed store
	restart := func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		ns, err := testserver.New(dir, func(o *server.Options) { o.Port = port })
		if err != nil {
			t.Error(err)
			return
		}
		s = ns
	}
	current := func() *server.Server {
		mu.Lock()
		defer mu.Unlock()
		return s
	}
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		s := s
		mu.Unlock()
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "orders.us", 5, 0)
	addConsumer(t, js, "ORDERS", rich("back"))
	addConsumer(t, js, "ORDERS", rich("gone"))
	before := configWithoutStart(t, js, "ORDERS", "back")
	beforeGone := configWithoutStart(t, js, "ORDERS", "gone")
	stop := func() error { s := current(); s.Shutdown(); s.WaitForShutdown(); return nil }

	// Back in time: finished in the same run.
	opts := Options{Method: Recreate, Timeout: 500 * time.Millisecond, Settle: 20 * time.Second, beforeCreate: func() error {
		_ = stop()
		time.AfterFunc(300*time.Millisecond, restart)
		return nil
	}}
	t0 := time.Now()
	p := mustRun(t, js, "ORDERS", []string{"back"}, Target{Kind: ToSeq, Seq: 3}, opts)
	t.Logf("finished in the same run after %s", time.Since(t0))
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "back"))
	wantHistory(t, js, "ORDERS", "back", p.Changes[0].ChangeID)

	// Gone for longer than Settle: left to recover, which finishes it.
	opts = Options{Method: Recreate, Timeout: 300 * time.Millisecond, Settle: time.Second, beforeCreate: stop}
	p = mustPlan(t, js, "ORDERS", []string{"gone"}, Target{Kind: ToSeq, Seq: 3}, opts)
	t0 = time.Now()
	err = Execute(context.Background(), js, p, opts)
	t.Logf("gave up after %s", time.Since(t0))
	if err == nil || !strings.Contains(err.Error(), "may be deleted") || !strings.Contains(err.Error(), "jsctl consumer recover ORDERS gone --execute") {
		t.Fatalf("got %v", err)
	}
	t.Logf("error: %v", err)
	// This process ends (its connection, with anything it could not send,
	// goes); the server comes back; recover runs.
	nc.Close()
	restart()
	nc = testserver.Connect(t, current())
	js, _ = jetstream.New(nc)
	r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 1 || r.Changes[0].State != StateMissing || r.Changes[0].Action != ActCreate {
		t.Fatalf("recover plan %+v", r.Changes)
	}
	if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
		t.Fatal(err)
	}
	sameConfig(t, beforeGone, configWithoutStart(t, js, "ORDERS", "gone"))
	if got := fetch(t, js, "ORDERS", "gone", 1); len(got) != 1 || got[0] != 3 {
		t.Fatalf("next delivery %v, want 3", got)
	}
	wantHistory(t, js, "ORDERS", "gone", p.Changes[0].ChangeID)
}

// TestIntentsListDenied: a user who may not read the intent bucket (its
// watch's consumer create is refused) gets a permission error naming it,
// not a timeout.
func TestIntentsListDenied(t *testing.T) {
	js := deniedJS(t, "$JS.API.CONSUMER.CREATE.KV_"+IntentBucket+".>")
	ctx := testCtx(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: IntentBucket}); err != nil {
		t.Fatal(err)
	}
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	_, err := ListUnfinished(ctx, js, "", "ORDERS")
	if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), IntentBucket) {
		t.Fatalf("got %v, want a permission denial naming the bucket", err)
	}
}
