package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// info reads a consumer's info (pull or push); nil when it does not exist.
func (e *env) info(name string) *jetstream.ConsumerInfo {
	e.t.Helper()
	msg, err := e.nc.Request("$JS.API.CONSUMER.INFO.ORDERS."+name, nil, 10*time.Second)
	if err != nil {
		e.t.Fatalf("consumer info %s: %v", name, err)
	}
	var ci struct {
		jetstream.ConsumerInfo
		Error *struct {
			Code int `json:"err_code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &ci); err != nil {
		e.t.Fatal(err)
	}
	if ci.Error != nil {
		if ci.Error.Code == int(jetstream.JSErrCodeConsumerNotFound) {
			return nil
		}
		e.t.Fatalf("consumer info %s: %s", name, msg.Data)
	}
	return &ci.ConsumerInfo
}

// pausedCount is how many of the consumers are paused, or keep a pause
// time in their configuration; with complain, each is an error.
func (e *env) pausedCount(names []string, complain bool) int {
	e.t.Helper()
	n := 0
	for _, name := range names {
		ci := e.info(name)
		if ci == nil {
			continue // missing: counted as lost elsewhere
		}
		if ci.Paused || ci.Config.PauseUntil != nil {
			n++
			if complain {
				e.t.Errorf("consumer %s left paused (until %v)", name, ci.Config.PauseUntil)
			}
		}
	}
	return n
}

// recoverAndCompare runs recover --execute, then counts the consumers lost
// (missing and not deleted by the test itself), those whose configuration
// differs from before (apart from the start position; a pause left behind
// is a difference) and those left paused.
func (e *env) recoverAndCompare(names []string, before map[string]any, deleted map[string]bool, f *figures) (paused int) {
	e.t.Helper()
	out := e.recoverCompare(names, before, deleted, f)
	p := e.pausedCount(names, true)
	if p > 0 {
		e.t.Logf("recover said:\n%s", out)
	}
	return p
}

// moveAll moves every consumer to next delivery seq in this process (not
// the jsctl under test), so the next restore has somewhere to move them
// from.
func (e *env) moveAll(seq uint64) {
	e.t.Helper()
	opts := reset.Options{Force: true}
	p, err := reset.NewPlan(e.ctx(), e.js, "ORDERS", nil, true, reset.Target{Kind: reset.ToSeq, Seq: seq}, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := reset.Execute(e.ctx(), e.js, p, opts); err != nil {
		e.t.Fatal(err)
	}
}

// TestKillJsctlDuringRestore kills jsctl (kill -9) at random moments while
// `consumer snapshot restore --execute` returns eight consumers with rich
// configurations to a snapshot: some moved in place, some recreated (their
// deliver policy does not allow the move), some deleted beforehand and
// created again from the snapshot. After `consumer recover --execute` no
// consumer jsctl touched may be lost, none may have another configuration
// and none may be left paused; a whole restore then brings every consumer
// back to its saved ack floor + 1.
func TestKillJsctlDuringRestore(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	names := e.richConsumers(8, false)
	e.moveAll(120)
	before := e.configs(names)
	if code, out, errs := e.run("consumer", "snapshot", "save", "pre", "ORDERS", "--all"); code != 0 {
		t.Fatalf("snapshot save exited %d:\n%s\n%s", code, out, errs)
	}
	snap, err := positions.Get(e.ctx(), e.js, "pre", positions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	restore := []string{"consumer", "snapshot", "restore", "pre", "--execute", "--force"}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	e.moveAll(30)
	kill := newKiller(e, rng, restore...)
	var f figures
	paused, deletedByTest := 0, 0
	for f.tries = 1; ; f.tries++ {
		e.moveAll(1 + uint64(rng.IntN(190)))
		deleted := map[string]bool{}
		for _, i := range rng.Perm(len(names))[:2] {
			if err := e.js.DeleteConsumer(e.ctx(), "ORDERS", names[i]); err != nil {
				t.Fatal(err)
			}
			deleted[names[i]] = true
			deletedByTest++
		}
		cmd := kill.run(f.tries, restore...)
		present := e.configs(names)
		for _, n := range names {
			if _, ok := present[n]; !ok && !deleted[n] {
				f.missingBefore++ // deleted by jsctl, not yet created again
			}
		}
		was := f.interrupted
		paused += e.recoverAndCompare(names, before, deleted, &f)
		kill.observe(f.tries, cmd, f.interrupted-was)
		// A whole restore brings everything back where the snapshot says.
		if code, out, errs := e.run(restore...); code != 0 {
			t.Fatalf("try %d: a whole restore exited %d:\n%s\n%s", f.tries, code, out, errs)
		}
		for _, cs := range snap.Streams[0].Consumers {
			ci := e.info(cs.Name)
			if ci == nil {
				f.lost++
				t.Errorf("try %d: consumer %s missing after a whole restore", f.tries, cs.Name)
				continue
			}
			if got := ci.AckFloor.Stream; got != cs.AckFloor.StreamSeq {
				t.Errorf("try %d: consumer %s restored to ack floor %d, want %d", f.tries, cs.Name, got, cs.AckFloor.StreamSeq)
			}
		}
		if !reflect.DeepEqual(e.configs(names), before) {
			f.changed++
			t.Errorf("try %d: configurations differ after a whole restore", f.tries)
		}
		if enough(&f, 15) {
			break
		}
	}
	t.Logf("seed %d; a whole restore takes %s and sends %d change requests", seed, kill.full.Round(time.Millisecond), kill.requests)
	t.Logf("SUMMARY kill -9 jsctl during snapshot restore: tries %d (killed at a change request %d, at a random moment %d), consumers deleted beforehand (for the restore to create) %d, changes interrupted %d (consumers jsctl deleted and had not created again %d), lost %d, changed %d, left paused after recover %d",
		f.tries, kill.atRequest, kill.timed, deletedByTest, f.interrupted, f.missingBefore, f.lost, f.changed, paused)
	if f.interrupted == 0 {
		t.Errorf("no kill landed in the middle of a change: the test showed nothing")
	}
	if f.lost != 0 || f.changed != 0 || paused != 0 {
		t.Errorf("lost %d, changed %d, left paused %d; want 0, 0 and 0", f.lost, f.changed, paused)
	}
}

// livePullers keeps a plain client consuming from each pull consumer of
// names (restarted when asked: a recreate ends a client's subscription).
type livePullers struct {
	e    *env
	stop []func()
}

func (l *livePullers) restart(names []string) {
	l.e.t.Helper()
	l.close()
	for _, n := range names {
		c, err := l.e.js.Consumer(l.e.ctx(), "ORDERS", n)
		if err != nil || c.CachedInfo().Config.DeliverSubject != "" {
			continue
		}
		cc, err := c.Consume(func(m jetstream.Msg) {
			time.Sleep(time.Millisecond)
			_ = m.Ack()
		}, jetstream.PullMaxMessages(5), jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {}))
		if err != nil {
			l.e.t.Fatal(err)
		}
		l.stop = append(l.stop, cc.Stop)
	}
}

func (l *livePullers) close() {
	for _, s := range l.stop {
		s()
	}
	l.stop = nil
}

// TestKillJsctlDuringPausedReset kills jsctl (kill -9) at random moments
// while `consumer reset --all --pause --execute` moves eight consumers with
// rich configurations that live clients are reading from (in place and by
// recreate). After `consumer recover --execute` no consumer may be lost,
// none may have another configuration, and none may be left paused.
func TestKillJsctlDuringPausedReset(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	names := e.richConsumers(8, false)
	before := e.configs(names)
	pullers := &livePullers{e: e}
	t.Cleanup(pullers.close)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 4))
	args := func(seq int) []string {
		return []string{"consumer", "reset", "ORDERS", "--all", "--to-seq", fmt.Sprint(seq), "--pause", "--drain-timeout", "10s", "--execute"}
	}
	pullers.restart(names)
	kill := newKiller(e, rng, args(150)...)
	if n := e.pausedCount(names, true); n != 0 {
		t.Fatalf("a whole run left %d consumers paused", n)
	}
	var f figures
	paused, pausedAtKill := 0, 0
	for f.tries = 1; ; f.tries++ {
		pullers.restart(names)
		cmd := kill.run(f.tries, args(1+rng.IntN(190))...)
		f.missingBefore += len(names) - len(e.configs(names))
		pausedAtKill += e.pausedCount(names, false)
		was := f.interrupted
		paused += e.recoverAndCompare(names, before, nil, &f)
		kill.observe(f.tries, cmd, f.interrupted-was)
		if enough(&f, 12) {
			break
		}
	}
	t.Logf("seed %d; a whole run takes %s and sends %d change requests", seed, kill.full.Round(time.Millisecond), kill.requests)
	t.Logf("SUMMARY kill -9 jsctl during reset --pause (live pullers): tries %d (killed at a change request %d, at a random moment %d), changes interrupted %d (consumers paused by the killed run %d, missing %d), lost %d, changed %d, left paused after recover %d",
		f.tries, kill.atRequest, kill.timed, f.interrupted, pausedAtKill, f.missingBefore, f.lost, f.changed, paused)
	if f.interrupted == 0 {
		t.Errorf("no kill landed in the middle of a change: the test showed nothing")
	}
	if f.lost != 0 || f.changed != 0 || paused != 0 {
		t.Errorf("lost %d, changed %d, left paused %d; want 0, 0 and 0", f.lost, f.changed, paused)
	}
}
