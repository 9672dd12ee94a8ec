package jsutil_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fakeAPI answers the JetStream API subject it serves on a plain NATS
// server (without JetStream) from a script: the reply to the n-th request
// is replies[n-1] ("" leaves that request unanswered); past the script the
// last entry repeats. It counts the requests it got.
type fakeAPI struct {
	mu      sync.Mutex
	replies []string
	got     int
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got
}

// serveFake serves api (under the default prefix, or domain's) with f and
// returns a jetstream handle on another connection.
func serveFake(t *testing.T, s *server.Server, api string, f *fakeAPI, jsOpts ...jetstream.JetStreamOpt) jetstream.JetStream {
	t.Helper()
	srv := testserver.Connect(t, s)
	subject := "$JS.API." + api
	if _, err := srv.Subscribe(subject, func(m *nats.Msg) {
		f.mu.Lock()
		f.got++
		reply := f.replies[min(f.got, len(f.replies))-1]
		f.mu.Unlock()
		if reply != "" {
			_ = m.Respond([]byte(reply))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(testserver.Connect(t, s), jsOpts...)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

const (
	okReply          = `{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"S"}}`
	unavailableReply = `{"error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`
	noPeersReply     = `{"error":{"code":500,"err_code":10005,"description":"no suitable peers for placement"}}`
	notEnabledReply  = `{"error":{"code":503,"err_code":10076,"description":"JetStream not enabled"}}`
	notFoundReply    = `{"error":{"code":404,"err_code":10059,"description":"stream not found"}}`
	deniedReply      = `{"error":{"code":403,"err_code":10099,"description":"forbidden"}}`
	badReply         = `{"error":{"code":400,"err_code":10052,"description":"bad request"}}`
)

// plainServer is a NATS server without JetStream: only the fake answers
// JetStream API subjects.
func plainServer(t *testing.T) *server.Server {
	return testserver.Start(t, func(o *server.Options) { o.JetStream = false })
}

// TestRequestRetryRule: a request left unanswered, or answered with a
// transient server error, is sent again within the retry budget and its
// answer returned; one marked Once is sent again only after a transient
// error; an answer that decides is returned after one request.
func TestRequestRetryRule(t *testing.T) {
	s := plainServer(t)
	var reports []jsutil.Unanswered
	var mu sync.Mutex
	ctx := jsutil.WithRetry(testserver.Context(t, time.Minute), time.Minute, func(u jsutil.Unanswered) {
		mu.Lock()
		reports = append(reports, u)
		mu.Unlock()
	})
	cases := []struct {
		name    string
		replies []string
		once    bool
		want    error // nil: okReply
		sent    int
	}{
		{"unanswered then answered", []string{"", okReply}, false, nil, 2},
		{"503 then answered", []string{unavailableReply, okReply}, false, nil, 2},
		{"no peers then answered", []string{noPeersReply, okReply}, false, nil, 2},
		{"once: 503 then answered", []string{unavailableReply, okReply}, true, nil, 2},
		{"once: unanswered is not sent again", []string{"", okReply}, true, context.DeadlineExceeded, 1},
		{"jetstream not enabled is final", []string{notEnabledReply, okReply}, false, jetstream.ErrJetStreamNotEnabled, 1},
		{"not found is final", []string{notFoundReply, okReply}, false, jetstream.ErrStreamNotFound, 1},
		{"403 is final", []string{deniedReply, okReply}, false, jsutil.ErrPermission, 1},
		{"bad request is final", []string{badReply, okReply}, false, &jetstream.APIError{ErrorCode: 10052}, 1},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeAPI{replies: c.replies}
			api := "STREAM.INFO.S" + string(rune('a'+i))
			js := serveFake(t, s, api, f)
			mu.Lock()
			reports = nil
			mu.Unlock()
			data, err := jsutil.Request(ctx, js, api, nil, jsutil.RequestOptions{Timeout: 300 * time.Millisecond, Once: c.once})
			switch {
			case c.want == nil && (err != nil || string(data) != okReply):
				t.Fatalf("got %q, %v; want the answer", data, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %q, %v; want %v", data, err, c.want)
			}
			if got := f.count(); got != c.sent {
				t.Errorf("sent %d times, want %d", got, c.sent)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != c.sent-1 {
				t.Errorf("the retry callback was told %d times, want %d", len(reports), c.sent-1)
			}
		})
	}
}

// TestRequestBudget: a request that stays unanswered is sent again only
// until the retry budget is spent, and the last error is returned.
func TestRequestBudget(t *testing.T) {
	s := plainServer(t)
	budget := 300 * time.Millisecond
	ctx := jsutil.WithRetry(testserver.Context(t, time.Minute), budget, nil)
	f := &fakeAPI{replies: []string{unavailableReply}}
	js := serveFake(t, s, "STREAM.INFO.S", f)
	start := time.Now()
	_, err := jsutil.Request(ctx, js, "STREAM.INFO.S", nil, jsutil.RequestOptions{Timeout: time.Second})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 503 {
		t.Fatalf("got %v, want the 503", err)
	}
	// Sent at once, then again after 100ms, 200ms, ...: at least twice
	// within 300ms; the budget ends it long before the context would.
	if n := f.count(); n < 2 || n > 5 {
		t.Errorf("sent %d times within a %s budget, want 2 to 5", n, budget)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s with a %s budget", took, budget)
	}

	// Nobody serves the subject: no responders, sent again within the
	// budget, then reported as such.
	_, err = jsutil.Request(ctx, js, "STREAM.INFO.NOBODY", nil, jsutil.RequestOptions{Timeout: time.Second})
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("got %v, want no responders", err)
	}
}

// TestRequestDomain: the request goes to the domain's API prefix.
func TestRequestDomain(t *testing.T) {
	s := plainServer(t)
	srv := testserver.Connect(t, s)
	got := make(chan string, 1)
	if _, err := srv.Subscribe("$JS.hub.API.>", func(m *nats.Msg) {
		got <- m.Subject
		_ = m.Respond([]byte(okReply))
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.NewWithDomain(testserver.Connect(t, s), "hub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsutil.Request(testserver.Context(t, time.Minute), js, "STREAM.INFO.S", nil, jsutil.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	if subj := <-got; subj != "$JS.hub.API.STREAM.INFO.S" {
		t.Errorf("sent to %q", subj)
	}
}

func TestAPIPrefix(t *testing.T) {
	cases := []struct {
		o    jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{}, "$JS.API."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API."},
		{jetstream.JetStreamOptions{APIPrefix: "JS.acct.API"}, "JS.acct.API."},
		{jetstream.JetStreamOptions{APIPrefix: "JS.acct.API."}, "JS.acct.API."},
	}
	for _, c := range cases {
		if got := jsutil.APIPrefix(c.o); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.o, got, c.want)
		}
	}
}
