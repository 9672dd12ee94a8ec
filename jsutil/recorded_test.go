package jsutil_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// TestIdentityIs: Is needs both creation times known and equal (unlike
// Same, an unknown one proves nothing).
func TestIdentityIs(t *testing.T) {
	t1 := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	t2 := t1.Add(time.Nanosecond)
	rec := jsutil.RecordedConsumer("S", "c", &t1)
	for _, c := range []struct {
		now  jsutil.Identity
		want bool
	}{
		{jsutil.RecordedConsumer("S", "c", &t1), true},
		{jsutil.RecordedConsumer("S", "c", &t2), false},
		{jsutil.RecordedConsumer("S", "c", nil), false},
		{jsutil.RecordedConsumer("S", "d", &t1), false},
		{jsutil.RecordedStream("c", &t1), false},
	} {
		if got := rec.Is(c.now); got != c.want {
			t.Errorf("Is(%+v) = %v, want %v", c.now, got, c.want)
		}
	}
	if jsutil.RecordedConsumer("S", "c", nil).Is(rec) {
		t.Error("an unknown recorded time is some incarnation")
	}
}

// TestCopyOf: a copy is of an incarnation by the identity its header
// carries (nats-server 2.14+), else by its time against the creation time;
// with no creation time known it cannot be told.
func TestCopyOf(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 123, time.UTC)
	o := jsutil.RecordedStream("O", &created)
	hash := jsutil.StreamIdentityHash(created)
	if hash != o.Hash() || len(hash) != 8 {
		t.Fatalf("Hash %q, StreamIdentityHash %q", o.Hash(), hash)
	}
	for _, c := range []struct {
		name        string
		ident       string
		stored      time.Time
		same, known bool
	}{
		{"its identity", hash, created.Add(-time.Hour), true, true},
		{"another identity", "AAAAAAAA", created.Add(time.Hour), false, true},
		{"no identity, stored after", "", created.Add(time.Millisecond), true, true},
		{"no identity, stored at", "", created, true, true},
		{"no identity, stored before", "", created.Add(-time.Millisecond), false, true},
	} {
		same, known := o.CopyOf(c.ident, c.stored)
		if same != c.same || known != c.known {
			t.Errorf("%s: CopyOf = %v, %v; want %v, %v", c.name, same, known, c.same, c.known)
		}
	}
	if same, known := jsutil.RecordedStream("O", nil).CopyOf("AAAAAAAA", created); !same || known {
		t.Errorf("unknown incarnation: %v, %v; want taken as the same, not known", same, known)
	}
	for h, want := range map[string]string{
		"O 5 > > o.a arf6zCRx":                   "arf6zCRx",
		"O:Kx1 5 orders.> xf.orders.> orders.eu": "",
		"O 5":                                    "",
		"$JS.ACK.O.c.1.5.5.1700000000000000000.0": "",
	} {
		if got := jsutil.SourceIdentity(h); got != want {
			t.Errorf("SourceIdentity(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestRecordedValues: times before 1970 or more than RecordSkew ahead are
// impossible; a subject read from a record must be a plain subject
// outside the server's own APIs.
func TestRecordedValues(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, ""},
		{now, ""},
		{now.Add(jsutil.RecordSkew - time.Second), ""},
		{now.Add(jsutil.RecordSkew + time.Second), "lies in the future"},
		{time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), "is before 1970"},
	} {
		got := jsutil.RecordedTimeProblem("its time", c.t, now)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.t, got, c.want)
		}
	}
	if jsutil.RecordedTimePtrProblem("x", nil, now) != "" {
		t.Error("nil time")
	}
	for subject, want := range map[string]string{
		"deliver.billing":              "",
		"_INBOX.abc":                   "",
		"$JS.API.STREAM.DELETE.VICTIM": "server's own API ($JS.>)",
		"$KV.JSCTL_ACKS.x":             "server's own API ($KV.>)",
		"$SYS.REQ.SERVER.PING":         "server's own API ($SYS.>)",
		"$JS.hub.API.STREAM.DELETE.X":  "server's own API ($JS.>)",
		"orders.*":                     "holds a wildcard",
		"orders.>":                     "holds a wildcard",
		"orders..eu":                   "empty token",
		"":                             "is empty",
		"with space":                   "white space",
	} {
		got := jsutil.RecordedSubjectProblem("deliver subject", subject)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", subject, got, want)
		}
	}
}
