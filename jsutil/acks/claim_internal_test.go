package acks

import (
	"testing"
	"time"
)

// Finding 6: a claim's recorded lease is judged, not only its TTL.
func TestClaimProblem(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lease := 30 * time.Second
	for _, tc := range []struct {
		name             string
		written, expires time.Time
		want             bool // expired
		reported         bool
	}{
		{"live", now.Add(-time.Second), now.Add(29 * time.Second), false, false},
		{"within the skew", now.Add(-40 * time.Second), now.Add(-10 * time.Second), false, false},
		{"2001", now.Add(-time.Hour), time.Unix(0, 1000000000000000000), true, true},
		{"ran out a minute ago", now.Add(-2 * time.Minute), now.Add(-61 * time.Second), true, true},
		{"2100, just written", now.Add(-time.Second), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), false, true},
		{"2100, a lease ago", now.Add(-lease - leaseSkew - time.Second), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), true, true},
		{"no expiry, a lease ago", now.Add(-lease - leaseSkew - time.Second), time.Time{}, true, true},
	} {
		why, expired := claimProblem(Record{KVKey: "r.S.c.s1", Time: tc.written, LeaseExpires: tc.expires}, lease, now)
		if expired != tc.want || (why != "") != tc.reported {
			t.Errorf("%s: expired %v (%q), want %v reported %v", tc.name, expired, why, tc.want, tc.reported)
		}
	}
}
