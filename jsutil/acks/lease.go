package acks

import (
	"context"
	"errors"
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
// What that guarantees: the TTL runs from the last write the server stored,
// and that write was sent at most renewEvery(lease) before an outage began
// (a leader election of the bucket's stream, a restart). If the outage ends
// within lease - renewEvery(lease) - writeAttempt - writeRetry, a renewal or
// the done write lands before the TTL runs out, so no other worker can
// claim the message and no handler runs twice. With the default 30s lease
// that is 25.75s; with MinReplicatedLease 12.25s. Elections of a nats-server
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

// held is one claim kept alive by a leaseKeeper.
type held struct {
	j   *job
	rev uint64 // current revision (changes with each renewal)
	// sent is when the last write the server stored (the claim or a
	// renewal) was sent: its TTL runs out no earlier than sent + lease.
	sent time.Time
	lost bool
}

// leaseKeeper renews a set of claims while a handler runs. A renewal whose
// compare-and-set fails, or that cannot be stored before the lease would run
// out, loses that claim: the handler's context is cancelled, and nothing is
// acked or marked done for it.
type leaseKeeper struct {
	s      *Store
	lease  time.Duration
	mu     sync.Mutex
	claims []*held
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
}

// keepLeases starts renewing the claims of jobs (each already claimed at
// sent) and returns the handler's context.
func (s *Store) keepLeases(ctx context.Context, lease time.Duration, jobs []*job) (context.Context, *leaseKeeper) {
	hctx, cancel := context.WithCancel(ctx)
	k := &leaseKeeper{s: s, lease: lease, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	for _, j := range jobs {
		k.claims = append(k.claims, &held{j: j, rev: j.cl.rev, sent: j.cl.sent})
	}
	go k.run(hctx)
	return hctx, k
}

func (k *leaseKeeper) run(ctx context.Context) {
	defer close(k.done)
	every := renewEvery(k.lease)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if k.renew(ctx, every) {
			k.cancel()
			return
		}
	}
}

// renew rewrites every claim not yet lost, all in flight together, and
// reports whether any was lost.
func (k *leaseKeeper) renew(ctx context.Context, every time.Duration) bool {
	type pending struct {
		h    *held
		fut  jetstream.PubAckFuture
		sent time.Time
	}
	k.mu.Lock()
	var ps []pending
	for _, h := range k.claims {
		if h.lost {
			continue
		}
		j := h.j
		v := j.value(StateClaim, k.s.worker)
		v.Expires = time.Now().Add(k.lease).UnixNano()
		now := time.Now()
		fut, err := k.s.js.PublishMsgAsync(k.s.kvMsg(j.kvKey, v.encode(), h.rev, k.lease))
		if err == nil {
			ps = append(ps, pending{h: h, fut: fut, sent: now})
		}
	}
	k.mu.Unlock()
	wait := time.NewTimer(min(every, writeAttempt))
	defer wait.Stop()
	for _, p := range ps {
		var err error
		var seq uint64
		select {
		case ack := <-p.fut.Ok():
			seq = ack.Sequence
		case err = <-p.fut.Err():
		case <-wait.C:
			err = context.DeadlineExceeded
		case <-ctx.Done():
			err = ctx.Err()
		}
		k.mu.Lock()
		switch {
		case err == nil:
			p.h.rev, p.h.sent = seq, p.sent
			_ = p.h.j.msg.InProgress() // keep JetStream from redelivering meanwhile
		case errors.Is(casErr(err), jetstream.ErrKeyRevisionMismatch):
			p.h.lost = true
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	lost := false
	for _, h := range k.claims {
		if !h.lost && time.Since(h.sent) >= k.lease-every/2 {
			h.lost = true // it could run out before the next renewal lands
		}
		lost = lost || h.lost
	}
	return lost
}

// finish stops renewing and returns, per job, the claim's latest revision,
// when its last stored write was sent, and whether it was lost.
func (k *leaseKeeper) finish() []*held {
	close(k.stop)
	<-k.done
	k.cancel()
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.claims
}
