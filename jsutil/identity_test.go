package jsutil_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestIdentityCheck: the one comparison. An unknown creation time on
// either side is no difference; a known difference is Recreated, which is
// both ErrRecreated and ErrConflict and names both times.
func TestIdentityCheck(t *testing.T) {
	t1 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	t2 := t1.Add(time.Nanosecond)
	rec := jsutil.RecordedConsumer("ORDERS", "c", &t1)
	cases := []struct {
		name string
		now  jsutil.Identity
		want bool // an error
	}{
		{"same", jsutil.RecordedConsumer("ORDERS", "c", &t1), false},
		{"same in another zone", jsutil.RecordedConsumer("ORDERS", "c", ptr(t1.In(time.FixedZone("x", 3600)))), false},
		{"now unknown", jsutil.RecordedConsumer("ORDERS", "c", nil), false},
		{"one nanosecond apart", jsutil.RecordedConsumer("ORDERS", "c", &t2), true},
	}
	for _, c := range cases {
		err := rec.Check(c.now, "the plan was made")
		if (err != nil) != c.want {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, jsutil.ErrRecreated) || !errors.Is(err, jsutil.ErrConflict) {
			t.Errorf("%s: %v is not ErrRecreated and ErrConflict", c.name, err)
		}
		for _, s := range []string{`consumer "c" on "ORDERS"`, "since the plan was made", t1.Format(time.RFC3339Nano), t2.Format(time.RFC3339Nano)} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q lacks %q", c.name, err, s)
			}
		}
	}
	if err := jsutil.RecordedConsumer("ORDERS", "c", nil).Check(rec, ""); err != nil {
		t.Errorf("recorded unknown: %v", err)
	}
	if jsutil.RecordedStream("S", nil).Known() || !jsutil.RecordedStream("S", &t1).Known() {
		t.Error("Known")
	}
	if jsutil.RecordedStream("S", &t1).Same(jsutil.RecordedConsumer("S", "S", &t1)) {
		t.Error("a stream is the same as a consumer")
	}
	if got := jsutil.UnixNanoTime(t1.UnixNano()); got == nil || !got.Equal(t1) || jsutil.UnixNanoTime(0) != nil {
		t.Errorf("UnixNanoTime: %v", got)
	}
}

// TestStreamIdentityHash: the hash is the one the server writes as the
// last field of Nats-Stream-Source into a sourced copy.
func TestStreamIdentityHash(t *testing.T) {
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, 30*time.Second)
	o := testserver.AddStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.>"}})
	testserver.AddStream(t, js, jetstream.StreamConfig{Name: "S", Sources: []*jetstream.StreamSource{{Name: "O"}}})
	if _, err := js.Publish(ctx, "o.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	var hdr string
	testserver.WaitFor(t, 30*time.Second, "the sourced copy", func() bool {
		m, err := s.GetMsg(ctx, 1)
		if err != nil {
			return false
		}
		hdr = m.Header.Get("Nats-Stream-Source")
		return hdr != ""
	})
	info, err := o.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(hdr)
	want := jsutil.StreamIdentityHash(info.Created)
	if len(fields) < 6 || fields[len(fields)-1] != want {
		t.Fatalf("Nats-Stream-Source %q: last field is not the identity %q of O (created %s)", hdr, want, info.Created.Format(time.RFC3339Nano))
	}
	if jsutil.StreamIdentityHash(time.Time{}) != "" {
		t.Error("a zero time has an identity")
	}
}

func ptr(t time.Time) *time.Time { return &t }
