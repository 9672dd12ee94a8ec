package jsutil_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestOpenKV: a missing bucket is created with create and not found
// without; an existing one is opened as it is.
func TestOpenKV(t *testing.T) {
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, 30*time.Second)
	cfg := jetstream.KeyValueConfig{Bucket: "B", History: 3}
	if _, err := jsutil.OpenKV(ctx, js, cfg, false, time.Second, time.Second); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing bucket without create: %v", err)
	}
	kv, err := jsutil.OpenKV(ctx, js, cfg, true, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	kv, err = jsutil.OpenKV(ctx, js, jetstream.KeyValueConfig{Bucket: "B", History: 1}, true, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 3 || st.Values() != 1 {
		t.Fatalf("existing bucket: %+v %v, want it as it was (history 3, 1 value)", st, err)
	}
}

// TestOpenKVServerRestart: a bucket create sent while the server is down
// is sent again once it is back, within settle.
func TestOpenKVServerRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := s.Addr().(*net.TCPAddr).Port
	// Whichever server runs when the test ends stops before its store is
	// removed (a failure between the start and the shutdown included).
	t.Cleanup(func() {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	nc, js := connectJS(t, s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	s.Shutdown()
	s.WaitForShutdown()
	ctx := testserver.Context(t, time.Minute)
	var unanswered atomic.Int32 // attempts that went unanswered, each about to be sent again
	rctx := jsutil.WithRetry(ctx, 0, func(jsutil.Unanswered) { unanswered.Add(1) })
	done := make(chan error, 1)
	go func() {
		_, err := jsutil.OpenKV(rctx, js, jetstream.KeyValueConfig{Bucket: "B"}, true, 500*time.Millisecond, 30*time.Second)
		done <- err
	}()
	// The server stays down until three attempts went unanswered.
	testserver.WaitFor(t, 10*time.Second, "the client to notice the server is gone", func() bool { return !nc.IsConnected() })
	testserver.WaitFor(t, 20*time.Second, "three unanswered attempts", func() bool { return unanswered.Load() >= 3 })
	s, err = testserver.New(dir, func(o *server.Options) { o.Port = port })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open after the restart: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("OpenKV did not return")
	}
}

// TestOpenKVDenied: a refused request is reported as a permission denial
// after one request timeout, not sent again until settle runs out.
func TestOpenKVDenied(t *testing.T) {
	s := startAuth(t, testserver.Auth{User: "u", Password: "pw", Deny: []string{"$JS.API.STREAM.INFO.KV_B"}})
	_, js := connectJS(t, s.URL, nats.UserInfo("u", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	const timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := jsutil.OpenKV(context.Background(), js, jetstream.KeyValueConfig{Bucket: "B"}, true, timeout, time.Minute)
	if !errors.Is(err, jsutil.ErrPermission) || err.Error() != `permission denied (publish to "$JS.API.STREAM.INFO.KV_B")` {
		t.Fatalf("got %v, want a permission denial naming the subject", err)
	}
	if took := time.Since(start); took >= 2*timeout {
		t.Fatalf("took %v with a request timeout of %v: the refused request was sent again", took, timeout)
	}
}

// connectJS connects to url (closed when the test ends) and opens JetStream.
func connectJS(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestWhileUnanswered: unanswered requests are sent again until one is
// answered or settle passes; a refusal, an answer that decides and a
// server without JetStream are not.
func TestWhileUnanswered(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := jsutil.WhileUnanswered(ctx, time.Minute, func() error {
		calls++
		switch calls {
		case 1:
			return nats.ErrTimeout
		case 2:
			return &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}
		case 3:
			return &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Fatalf("got %v after %d calls, want nil after 4", err, calls)
	}
	for _, decided := range []error{
		jsutil.Errorf(jsutil.ErrPermission, "permission denied (publish to %q)", "$JS.API.STREAM.INFO.S"),
		jetstream.ErrStreamNotFound, jetstream.ErrJetStreamNotEnabled, errors.New("other"),
	} {
		calls = 0
		err := jsutil.WhileUnanswered(ctx, time.Minute, func() error { calls++; return decided })
		if !errors.Is(err, decided) || calls != 1 {
			t.Errorf("%v: got %v after %d calls, want it after 1", decided, err, calls)
		}
	}
	calls = 0
	start := time.Now()
	err = jsutil.WhileUnanswered(ctx, 300*time.Millisecond, func() error { calls++; return context.DeadlineExceeded })
	if !errors.Is(err, context.DeadlineExceeded) || calls < 2 || time.Since(start) > 5*time.Second {
		t.Fatalf("never answered: %v after %d calls in %v, want a few calls within settle", err, calls, time.Since(start))
	}
}
