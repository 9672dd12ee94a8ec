package acks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Lease timing. A claim is a record with a per-record TTL, the lease; the
// server removes it when the TTL runs out, and only then can another worker
// claim the message. While the handler runs the claim is rewritten every
// renewEvery(lease) (compare-and-set on the revision held, fresh TTL), and
// a write that gets no answer is retried every writeRetry, each attempt
// waiting at most writeAttempt.
//
// What that guarantees: the TTL runs from the last write the server stored.
// Claims are checked every half renewEvery and rewritten once their last
// write is renewEvery old, so that write was sent at most 1.5×renewEvery
// before an outage began (a leader election of the bucket's stream, a
// restart). If the outage ends within
// lease - 1.5×renewEvery(lease) - writeAttempt - writeRetry, a renewal or
// the done write lands before the TTL runs out, so no other worker can
// claim the message and no handler runs twice. With the default 30s lease
// that is 24.25s; with MinReplicatedLease 11.5s. Elections of a nats-server
// R3 stream take 4 to 9 seconds (raft election timeouts) after a leader
// dies, plus the time to notice.
const (
	// MinReplicatedLease is the shortest lease allowed on a replicated
	// bucket: an election must fit inside it (see above).
	MinReplicatedLease = 15 * time.Second
	writeAttempt       = time.Second
	writeRetry         = 250 * time.Millisecond
)

// renewEvery is how often a claim is renewed: a tenth of the lease, between
// half a second and three seconds.
func renewEvery(lease time.Duration) time.Duration {
	return min(max(lease/10, 500*time.Millisecond), 3*time.Second)
}

// checkLease checks a lease against the bucket: whole seconds, at least 1s,
// and at least MinReplicatedLease on a replicated bucket.
func (s *Store) checkLease(lease time.Duration) error {
	if lease < time.Second || lease%time.Second != 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "lease %v: want whole seconds, at least 1s (the server counts TTLs in seconds)", lease)
	}
	if s.replicas > 1 && lease < MinReplicatedLease {
		return jsutil.Errorf(jsutil.ErrBadInput, "lease %v is below %v, the minimum on the replicated bucket %q: a leader election (4 to 9 seconds) must fit inside the lease", lease, MinReplicatedLease, s.bucket)
	}
	return nil
}

// held is one claim kept alive by a leases manager.
type held struct {
	j   *job
	rev uint64 // current revision (changes with each renewal)
	// sent is when the last write the server stored (the claim or a
	// renewal) was sent: its TTL runs out no earlier than sent + lease.
	sent time.Time
	lost bool
}

// leaseSet is the claims of one running handler (one message, or a batch).
type leaseSet struct {
	mu     sync.Mutex // held while a renewal of the set is in flight
	claims []*held
	cancel context.CancelFunc
}

// leases renews the claims of running handlers: one goroutine for all of
// them, so a short handler costs no goroutine or timer of its own. Every
// renewEvery(lease) it rewrites each claim whose last write is that old,
// all in flight together. A renewal whose compare-and-set fails, or that
// cannot be stored before the lease would run out, loses that claim: the
// handler's context is cancelled, and nothing is acked or marked done for
// it.
type leases struct {
	s     *Store
	lease time.Duration
	every time.Duration
	mu    sync.Mutex
	sets  map[*leaseSet]bool
	stop  chan struct{}
	done  chan struct{}
}

func (s *Store) newLeases(lease time.Duration) *leases {
	ls := &leases{s: s, lease: lease, every: renewEvery(lease), sets: map[*leaseSet]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go ls.run()
	return ls
}

// close stops the manager (after every set was released).
func (ls *leases) close() {
	close(ls.stop)
	<-ls.done
}

// hold starts keeping the claims of jobs (each claimed at j.cl.sent) and
// returns the handler's context. Jobs without a record need no claim.
func (ls *leases) hold(ctx context.Context, jobs []*job) (context.Context, *leaseSet) {
	hctx, cancel := context.WithCancel(ctx)
	set := &leaseSet{cancel: cancel}
	for _, j := range jobs {
		if j.d.Idempotent && !j.noClaim {
			set.claims = append(set.claims, &held{j: j, rev: j.cl.rev, sent: j.cl.sent})
		}
	}
	ls.mu.Lock()
	ls.sets[set] = true
	ls.mu.Unlock()
	return hctx, set
}

// release stops keeping a set (waiting for a renewal of it in flight) and
// copies each claim's latest revision and send time into its job; it
// reports whether any claim was lost.
func (ls *leases) release(set *leaseSet) bool {
	ls.mu.Lock()
	delete(ls.sets, set)
	ls.mu.Unlock()
	set.mu.Lock()
	defer set.mu.Unlock()
	set.cancel()
	lost := false
	for _, h := range set.claims {
		h.j.cl.rev, h.j.cl.sent = h.rev, h.sent
		if h.lost {
			h.j.res.LeaseLost = true
			lost = true
		}
	}
	return lost
}

func (ls *leases) run() {
	defer close(ls.done)
	t := time.NewTicker(ls.every / 2)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-t.C:
		}
		ls.mu.Lock()
		sets := make([]*leaseSet, 0, len(ls.sets))
		for set := range ls.sets {
			sets = append(sets, set)
		}
		ls.mu.Unlock()
		ls.renew(sets)
	}
}

// renew rewrites the due claims of sets, all in flight together, and
// cancels the handlers whose claims were lost.
func (ls *leases) renew(sets []*leaseSet) {
	type pending struct {
		set  *leaseSet
		h    *held
		fut  jetstream.PubAckFuture
		sent time.Time
	}
	var ps []pending
	var locked []*leaseSet
	defer func() {
		for _, set := range locked {
			set.mu.Unlock()
		}
	}()
	for _, set := range sets {
		set.mu.Lock()
		locked = append(locked, set)
		for _, h := range set.claims {
			if !h.lost && time.Since(h.sent) >= ls.lease-ls.every/2 {
				// Too late to renew: the lease may have run out already
				// (the process was stalled: a SIGSTOP, a paused VM), and
				// another worker may have the message. Stop the handler at
				// once, before any request.
				h.lost = true
				set.cancel()
			}
			if h.lost || time.Since(h.sent) < ls.every {
				continue
			}
			v := h.j.value(StateClaim, ls.s.worker)
			v.Expires = time.Now().Add(ls.lease).UnixNano()
			now := time.Now()
			fut, err := ls.s.js.PublishMsgAsync(ls.s.kvMsg(h.j.kvKey, v.encode(), h.rev, ls.lease))
			if err == nil {
				ps = append(ps, pending{set: set, h: h, fut: fut, sent: now})
			}
		}
	}
	wait := time.NewTimer(min(ls.every, writeAttempt))
	defer wait.Stop()
	expired := false
	now := make(chan time.Time)
	close(now)
	for _, p := range ps {
		var timeout <-chan time.Time = wait.C
		if expired {
			timeout = now // no more waiting: take what has arrived
		}
		select {
		case ack := <-p.fut.Ok():
			p.h.rev, p.h.sent = ack.Sequence, p.sent
			_ = p.h.j.msg.InProgress() // keep JetStream from redelivering meanwhile
		case err := <-p.fut.Err():
			if errors.Is(casErr(err), jetstream.ErrKeyRevisionMismatch) {
				p.h.lost = true
			}
		case <-timeout:
			expired = true
		}
	}
	for _, set := range sets {
		lost := false
		for _, h := range set.claims {
			if !h.lost && time.Since(h.sent) >= ls.lease-ls.every/2 {
				h.lost = true // it could run out before the next renewal lands
			}
			lost = lost || h.lost
		}
		if lost {
			set.cancel()
		}
	}
}

// leaseSkew is how far the clocks of the workers of one scope may differ:
// a claim's recorded lease expiry is judged with this allowance.
const leaseSkew = time.Minute

// claimProblem judges another worker's claim r (a record read back: its
// lease expiry was written by whoever wrote it) at now, for a run whose
// lease is lease. A claim whose recorded lease ran out more than leaseSkew
// ago is expired, whatever TTL the server keeps it under (one written by
// hand may have none). One whose lease lies more than a lease and
// leaseSkew ahead is implausible: it is reported, and expired once a lease
// has passed since it was written (by the server's clock). A claim with no
// lease expiry at all is judged the same way.
func claimProblem(r Record, lease time.Duration, now time.Time) (why string, expired bool) {
	written := r.Time
	afterOne := !written.IsZero() && now.After(written.Add(lease+leaseSkew))
	switch {
	case r.LeaseExpires.IsZero():
		why = fmt.Sprintf("ack record %q is a claim without a lease expiry (written %s)", r.KVKey, jsutil.CreatedText(&written))
		expired = afterOne
	case r.LeaseExpires.Before(now.Add(-leaseSkew)):
		return fmt.Sprintf("ack record %q is a claim whose lease ran out at %s by its own record: taken over", r.KVKey, r.LeaseExpires.UTC().Format(time.RFC3339Nano)), true
	case r.LeaseExpires.After(now.Add(lease + leaseSkew)):
		why = fmt.Sprintf("ack record %q is a claim whose lease runs to %s, implausibly far ahead (more than a lease and %s past this machine's clock)", r.KVKey, r.LeaseExpires.UTC().Format(time.RFC3339Nano), leaseSkew)
		expired = afterOne
	default:
		return "", false
	}
	if expired {
		why += ": taken over, a lease after it was written"
	} else {
		why += ": taken over if it is still there a lease after it was written"
	}
	return why, expired
}

// LeaseProblem says what is wrong with claim r's recorded lease at now
// ("" when nothing is, and for other records): it ran out by its own
// record more than a minute ago, or lies more than a minute ahead of any
// lease (see claimProblem). For listings, which know no lease.
func (r Record) LeaseProblem(now time.Time) string {
	if r.State != StateClaim {
		return ""
	}
	why, _ := claimProblem(r, 0, now)
	if i := strings.Index(why, ": taken over"); i >= 0 {
		why = why[:i]
	}
	return why
}
