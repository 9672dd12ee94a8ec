package jsutil_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// refusalTimeout is the --timeout of these tests: a refused request that
// waited for its answer would take at least this long.
const refusalTimeout = 20 * time.Second

// refusedRun starts a server whose user may publish anything but deny,
// and connects as a command does: with a run's record of refusals (the
// notes it says are collected). It creates stream ORD (allow_direct) with
// subjects ord.>.
func refusedRun(t *testing.T, deny ...string) (context.Context, *jsutil.Client, *notes) {
	t.Helper()
	s := startAuth(t, testserver.Auth{User: "u", Password: "pw", Deny: deny})
	n := &notes{}
	ctx := jsutil.WithRefusals(testserver.Context(t, 2*time.Minute), n.add)
	c, err := jsutil.Connect(ctx, jsutil.ConnectOptions{URL: s.URL, User: "u", Password: "pw", Timeout: refusalTimeout, NoContext: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	return ctx, c, n
}

type notes struct {
	mu   sync.Mutex
	list []string
}

func (n *notes) add(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, msg)
}

func (n *notes) get() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.list...)
}

// TestStreamMsgsSwitchesAtOnce (issue 27, finding 1): on a stream that
// allows direct gets, a user who may not direct-get (but may message-get)
// reads every message time right, switches to message gets on the first
// refusal without waiting for the timeout, says so once for the run, and
// the refusal is handled (no later error is blamed on it).
func TestStreamMsgsSwitchesAtOnce(t *testing.T) {
	ctx, c, n := refusedRun(t, "$JS.API.DIRECT.GET.>")
	for i, subj := range []string{"ord.a", "ord.b", "ord.a", "ord.b", "ord.a"} {
		if _, err := c.JS.Publish(ctx, subj, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	want := map[uint64]*jsutil.RawMsg{}
	for seq := uint64(1); seq <= 5; seq++ {
		m, err := jsutil.MsgGet(ctx, c.JS, "ORD", map[string]uint64{"seq": seq})
		if err != nil {
			t.Fatal(err)
		}
		want[seq] = m
	}
	start := time.Now()
	msgs := jsutil.NewStreamMsgs(c.JS, "ORD", true, 0)
	for seq := uint64(1); seq <= 5; seq++ {
		m, err := msgs.At(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if m == nil || m.Seq != seq || !m.Time.Equal(want[seq].Time) || m.Subject != want[seq].Subject {
			t.Fatalf("message %d: got %+v, want %+v", seq, m, want[seq])
		}
	}
	next, err := msgs.Next(ctx, 3, "ord.b")
	if err != nil || next == nil || next.Seq != 4 {
		t.Fatalf("next ord.b from 3: %+v, %v", next, err)
	}
	if none, err := msgs.At(ctx, 99); none != nil || err != nil {
		t.Fatalf("a sequence past the stream: %+v, %v", none, err)
	}
	// Another reader of the run starts with message gets.
	if !jsutil.DirectGetsRefused(ctx, "ORD") {
		t.Fatal("the run does not know the direct gets were refused")
	}
	if m, err := jsutil.NewStreamMsgs(c.JS, "ORD", true, 0).At(ctx, 2); err != nil || m == nil || m.Seq != 2 {
		t.Fatalf("second reader: %+v, %v", m, err)
	}
	if took := time.Since(start); took >= refusalTimeout {
		t.Errorf("the reads took %s: the refused direct get waited for the timeout (%s)", took, refusalTimeout)
	}
	got := n.get()
	if len(got) != 1 || !strings.Contains(got[0], `"$JS.API.DIRECT.GET.ORD"`) || !strings.Contains(got[0], `"$JS.API.STREAM.MSG.GET.ORD"`) {
		t.Errorf("notes %q, want one naming the refused direct get and the message get used instead", got)
	}
	if u := jsutil.RefusalsOf(ctx).Unhandled(); len(u) != 0 {
		t.Errorf("refusals nobody handled: %v", u)
	}
}

// TestStreamMsgsBothRefused: a user who may read messages neither way gets
// an error naming the message get, at once: the time is unknown, not
// absent.
func TestStreamMsgsBothRefused(t *testing.T) {
	ctx, c, _ := refusedRun(t, "$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.>")
	if _, err := c.JS.Publish(ctx, "ord.a", nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := jsutil.NewStreamMsgs(c.JS, "ORD", true, 0).At(ctx, 1)
	if m != nil || !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), `refused a publish to "$JS.API.STREAM.MSG.GET.ORD"`) {
		t.Fatalf("got %+v, %v; want a permission error naming the message get", m, err)
	}
	if took := time.Since(start); took >= refusalTimeout {
		t.Errorf("took %s: waited for the timeout", took)
	}
}

// TestRefusalBlamesItsOwnRequest (issue 27, the misleading errors): refused
// requests sent side by side each name their own subject, and a request
// that is not refused is never blamed on another's refusal.
func TestRefusalBlamesItsOwnRequest(t *testing.T) {
	ctx, c, _ := refusedRun(t, "$JS.API.STREAM.INFO.A", "$JS.API.STREAM.INFO.B")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	start := time.Now()
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = jsutil.Request(ctx, c.JS, "STREAM.INFO."+[]string{"A", "B"}[i%2], nil, jsutil.RequestOptions{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		own, other := []string{"A", "B"}[i%2], []string{"B", "A"}[i%2]
		if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), `"$JS.API.STREAM.INFO.`+own+`"`) || strings.Contains(err.Error(), `"$JS.API.STREAM.INFO.`+other+`"`) {
			t.Errorf("request for %s: %v", own, err)
		}
	}
	if took := time.Since(start); took >= refusalTimeout {
		t.Errorf("took %s: refused requests waited for the timeout", took)
	}
}

// TestUnrefusedNotBlamed: without a record of the run's refusals (a
// library user's own connection), a request left unanswered while another
// request is refused is a lost answer, not that refusal.
func TestUnrefusedNotBlamed(t *testing.T) {
	s := startAuth(t, testserver.Auth{User: "u", Password: "pw", Deny: []string{"$JS.API.STREAM.INFO.A"}})
	silent, err := nats.Connect(s.URL, nats.UserInfo("u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	got := make(chan struct{})
	if _, err := silent.Subscribe("$JS.API.SILENT", func(*nats.Msg) { got <- struct{}{} }); err != nil { // never answers
		t.Fatal(err)
	}
	if err := silent.Flush(); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.URL, nats.UserInfo("u", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := jsutil.WithRetry(testserver.Context(t, time.Minute), time.Millisecond, nil)
	done := make(chan error, 1)
	go func() {
		_, err := jsutil.Request(ctx, js, "SILENT", nil, jsutil.RequestOptions{Timeout: 3 * time.Second})
		done <- err
	}()
	<-got // the silent request is in flight: now another one is refused
	if _, err := jsutil.Request(ctx, js, "STREAM.INFO.A", nil, jsutil.RequestOptions{Timeout: 2 * time.Second}); !errors.Is(err, jsutil.ErrPermission) {
		t.Fatalf("refused request: %v", err)
	}
	err = <-done
	if err == nil || errors.Is(err, jsutil.ErrPermission) {
		t.Fatalf("the unanswered request: %v; want a lost answer, not another request's refusal", err)
	}
}

// TestExplainBlamesOnlyUnhandled (issue 27: restore said "may not get
// messages of stream ORD" while opening the ack bucket): a refusal that was
// dealt with (a direct get read by message get) is not blamed for a later
// request that timed out; the refusal of that request is.
func TestExplainBlamesOnlyUnhandled(t *testing.T) {
	ctx, c, _ := refusedRun(t, "$JS.API.DIRECT.GET.>", "$JS.API.STREAM.INFO.KV_ACKS")
	if _, err := c.JS.Publish(ctx, "ord.a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := jsutil.NewStreamMsgs(c.JS, "ORD", true, 0).At(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// nats.go's own request, which waits out its deadline.
	kctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := c.JS.KeyValue(kctx, "ACKS")
	if err == nil {
		t.Fatal("the refused bucket opened")
	}
	err = c.Explain(jsutil.Wrap(err, "open the ack bucket"))
	if !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), `"$JS.API.STREAM.INFO.KV_ACKS"`) || strings.Contains(err.Error(), "DIRECT.GET") {
		t.Fatalf("explained: %v; want the refusal of the bucket's stream info alone", err)
	}
}

// TestRefusalEndsOnlyItsRequests: a refused publish ends the requests to
// that subject; a refused subscription ends every request only when it is
// to the reply inboxes (no answer can come), not when it is to another
// subject (an advisory a consume run listens to).
func TestRefusalEndsOnlyItsRequests(t *testing.T) {
	ctx := jsutil.WithRefusals(context.Background(), nil)
	r := jsutil.RefusalsOf(ctx)
	violation := func(what string) error {
		return fmt.Errorf("%w: Permissions Violation for %s", nats.ErrPermissionViolation, what)
	}
	a, stopA := jsutil.EndOnRefusal(ctx, "$JS.API.A")
	defer stopA()
	b, stopB := jsutil.EndOnRefusal(ctx, "$JS.API.B")
	defer stopB()
	r.Note(violation(`Publish to "$JS.API.A"`), nats.InboxPrefix)
	r.Note(violation(`Subscription to "$JS.EVENT.ADVISORY.X"`), nats.InboxPrefix)
	if err := jsutil.RefusedCause(a, context.Canceled); a.Err() == nil || !errors.Is(err, jsutil.ErrPermission) || !strings.Contains(err.Error(), `"$JS.API.A"`) {
		t.Errorf("the refused request: ended %v, cause %v", a.Err(), err)
	}
	if b.Err() != nil {
		t.Errorf("another subject's request ended: %v", context.Cause(b))
	}
	r.Note(violation(`Subscription to "_INBOX.abc.*"`), nats.InboxPrefix)
	if b.Err() == nil || !errors.Is(context.Cause(b), jsutil.ErrPermission) {
		t.Errorf("a refused reply inbox did not end the request: %v", context.Cause(b))
	}
}
