package chaos

import (
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
)

// killer kills jsctl runs (kill -9). Odd tries die at a random moment of
// the run (killClock), start-up and verification included; even tries die
// the moment the server is sent the k-th request that changes a consumer
// of ORDERS (create, delete, reset, pause), k at random among the requests
// a whole run makes. Timed kills land anywhere; kills at a request land
// inside a change however slow or loaded the machine is, so every kill
// test interrupts changes.
type killer struct {
	e     *env
	rng   *rand.Rand
	clock killClock
	// full is how long a whole run took, and requests how many change
	// requests it made.
	full     time.Duration
	requests int
	// atRequest and timed count the kills made each way.
	atRequest, timed int
}

// newKiller times a whole run of args (not killed) and counts its change
// requests.
func newKiller(e *env, rng *rand.Rand, args ...string) *killer {
	e.t.Helper()
	var n atomic.Int64
	stop := e.watchChanges(func() { n.Add(1) })
	full := e.timed(args...)
	if err := e.nc.Flush(); err != nil {
		e.t.Fatal(err)
	}
	stop()
	k := &killer{e: e, rng: rng, clock: killClock{rng: rng, full: full}, full: full, requests: int(n.Load())}
	if k.requests == 0 {
		e.t.Fatalf("a whole run of jsctl %v sent no request that changes a consumer", args)
	}
	return k
}

// run starts `jsctl ARGS`, kills it as try says (unless it ends first) and
// waits for it; it returns the ended command.
func (k *killer) run(try int, args ...string) *exec.Cmd {
	e := k.e
	e.t.Helper()
	kill, atRequest, stop := k.moment(try)
	defer stop()
	cmd := e.command(args...)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-kill:
		_ = cmd.Process.Kill()
		k.fired(atRequest)
	case <-done:
	}
	<-done
	return cmd
}

// moment returns a channel closed at the moment try should kill, whether
// that moment is a change request (else a time), and a function that stops
// waiting for it. Call it before the run starts.
func (k *killer) moment(try int) (kill <-chan struct{}, atRequest bool, stop func()) {
	fire := make(chan struct{})
	var once sync.Once
	if try%2 == 0 {
		at := int64(1 + k.rng.IntN(k.requests))
		var n atomic.Int64
		stop := k.e.watchChanges(func() {
			if n.Add(1) == at {
				once.Do(func() { close(fire) })
			}
		})
		return fire, true, stop
	}
	t := time.AfterFunc(k.clock.next(), func() { once.Do(func() { close(fire) }) })
	return fire, false, func() { t.Stop() }
}

// fired counts a kill made at a moment from moment.
func (k *killer) fired(atRequest bool) {
	if atRequest {
		k.atRequest++
	} else {
		k.timed++
	}
}

// observe adjusts the clock after a timed try.
func (k *killer) observe(try int, cmd *exec.Cmd, interrupted int) {
	if try%2 == 1 {
		k.clock.observe(cmd, interrupted)
	}
}

// watchChanges calls hit for each request the server is sent (by anyone)
// that creates, deletes, resets or pauses a consumer of ORDERS, until stop
// is called.
func (e *env) watchChanges(hit func()) (stop func()) {
	e.t.Helper()
	sub, err := e.nc.Subscribe("$JS.API.CONSUMER.>", func(m *nats.Msg) {
		if changesConsumer(m.Subject) {
			hit()
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil { // the server has the subscription
		e.t.Fatal(err)
	}
	return func() { _ = sub.Unsubscribe() }
}

// changesConsumer says whether an API subject changes a consumer of
// ORDERS: $JS.API.CONSUMER.{CREATE,DELETE,RESET,PAUSE}.ORDERS.NAME... or
// $JS.API.CONSUMER.DURABLE.CREATE.ORDERS.NAME, except the temporary
// consumers a plan counts messages with.
func changesConsumer(subject string) bool {
	t := strings.Split(strings.TrimPrefix(subject, "$JS.API.CONSUMER."), ".")
	if len(t) >= 4 && t[0] == "DURABLE" && t[1] == "CREATE" {
		t = t[1:]
	}
	switch {
	case len(t) < 3 || t[1] != "ORDERS" || strings.HasPrefix(t[2], reset.TempPrefix):
		return false
	default:
		return t[0] == "CREATE" || t[0] == "DELETE" || t[0] == "RESET" || t[0] == "PAUSE"
	}
}

// killClock picks the moments to kill a run. A run's length, timed once,
// varies with the machine's load, so the clock learns from each try: a run
// that finished before the kill shortens it, a kill that interrupted no
// change (it landed before the first) lengthens it.
type killClock struct {
	rng  *rand.Rand
	full time.Duration
}

// next is a random moment between a quarter of a run and a quarter past it.
func (k *killClock) next() time.Duration {
	return k.full/4 + time.Duration(k.rng.Int64N(int64(k.full)))
}

// observe adjusts the clock after a try.
func (k *killClock) observe(cmd *exec.Cmd, interrupted int) {
	switch {
	case cmd.ProcessState != nil && cmd.ProcessState.Exited():
		k.full = k.full * 4 / 5
	case interrupted == 0:
		k.full = k.full * 5 / 4
	}
}

// enough says whether a kill test has run long enough: at least min tries
// and three interrupted changes, at most 40 tries.
func enough(f *figures, min int) bool {
	return f.tries >= 40 || (f.tries >= min && f.interrupted >= 3)
}
