package jsutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
)

// TestRequestErrorDenied: a request the server's permissions refuse times
// out; RequestError classes it as a permission denial naming the subject,
// and leaves a timeout of another subject a timeout.
func TestRequestErrorDenied(t *testing.T) {
	s := startAuth(t, testserver.Auth{User: "ro", Password: "pw", DenyJS: true})
	nc, err := nats.Connect(s.URL, nats.UserInfo("ro", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const subject = "$JS.API.CONSUMER.RESET.ORDERS.c"
	_, err = nc.Request(subject, nil, 300*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("denied request: %v, want a timeout", err)
	}
	got := jsutil.RequestError(nc, subject, err)
	if !errors.Is(got, jsutil.ErrPermission) || got.Error() != `permission denied (publish to "$JS.API.CONSUMER.RESET.ORDERS.c")` {
		t.Fatalf("got %v", got)
	}
	if jsutil.Denied(nc, subject) == nil {
		t.Fatal("Denied found no violation")
	}
	// Another subject's timeout is a lost reply, not a denial.
	if other := jsutil.RequestError(nc, "$JS.API.STREAM.INFO.ORDERS", err); other != err {
		t.Fatalf("another subject: %v", other)
	}
	if jsutil.RequestError(nc, subject, nil) != nil {
		t.Fatal("nil error classed")
	}
}
