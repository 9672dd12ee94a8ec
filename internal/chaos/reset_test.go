package chaos

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestKillJsctlDuringReset kills jsctl (kill -9) at random moments while
// `consumer reset --all --execute` changes eight consumers with rich
// configurations, by recreate and in place. After `consumer recover
// --execute` no consumer may be lost and none may have another
// configuration (apart from its start position).
func TestKillJsctlDuringReset(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	for _, method := range []string{"recreate", "reset"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t, natsproc.Options{})
			names := e.richConsumers(8, method == "reset")
			before := e.configs(names)
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 1))
			kill := newKiller(e, rng, resetArgs(method, 150)...)
			var f figures
			for f.tries = 1; ; f.tries++ {
				cmd := kill.run(f.tries, resetArgs(method, 1+rng.IntN(190))...)
				was := f.interrupted
				e.check(names, before, &f)
				kill.observe(f.tries, cmd, f.interrupted-was)
				if enough(&f, 30) {
					break
				}
			}
			t.Logf("seed %d; a whole run takes %s and sends %d change requests", seed, kill.full.Round(time.Millisecond), kill.requests)
			t.Logf("SUMMARY kill -9 jsctl during reset --method %s: tries %d (killed at a change request %d, at a random moment %d), changes interrupted %d (consumers missing before recover %d), lost %d, changed %d",
				method, f.tries, kill.atRequest, kill.timed, f.interrupted, f.missingBefore, f.lost, f.changed)
			if f.interrupted == 0 {
				t.Errorf("no kill landed in the middle of a change: the test showed nothing")
			}
			if f.lost != 0 || f.changed != 0 {
				t.Errorf("lost %d, changed %d; want 0 and 0", f.lost, f.changed)
			}
		})
	}
}

// TestKillServerDuringReset kills the nats-server process (kill -9) at
// random moments during a reset, restarts it on the same store, lets jsctl
// finish or give up, then runs recover: no consumer lost, none changed.
// The server syncs every write (sync_interval: always), as jsctl's own
// servers do: with the default lazy fsync a kill can lose acknowledged
// writes, which no client can make up for.
func TestKillServerDuringReset(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{JetStream: "sync_interval: always"})
	names := e.richConsumers(4, true)
	before := e.configs(names)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 2))
	// One killer per method: an in-place reset sends fewer requests.
	killers := map[string]*killer{}
	for _, m := range []string{"recreate", "auto"} {
		killers[m] = newKiller(e, rng, resetArgs(m, 150, "--timeout", "1s")...)
	}
	var f figures
	killedDuringRun := 0
	const tries = 10
	for f.tries = 1; f.tries <= tries; f.tries++ {
		method := []string{"recreate", "auto"}[f.tries/2%2] // each killed both ways
		kill := killers[method]
		moment, atRequest, stop := kill.moment(f.tries)
		cmd := e.command(resetArgs(method, 1+rng.IntN(190), "--timeout", "1s")...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-moment:
			killedDuringRun++
			kill.fired(atRequest)
		case err := <-done:
			done <- err // it ended before the kill
		}
		stop()
		e.srv.Kill()
		e.srv.Restart()
		select {
		case err := <-done:
			if err == nil {
				f.finishedInRun++
			} else {
				t.Logf("try %d (%s): jsctl: %v: %s", f.tries, method, err, lastLine(out.String()))
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("try %d: jsctl did not end within 90s after the server came back:\n%s", f.tries, out.String())
		}
		waitConnected(t, e.nc)
		e.check(names, before, &f)
	}
	f.tries = tries
	kr, ka := killers["recreate"], killers["auto"]
	t.Logf("seed %d; a whole run takes %s (recreate) and %s (auto) and sends %d and %d change requests", seed,
		kr.full.Round(time.Millisecond), ka.full.Round(time.Millisecond), kr.requests, ka.requests)
	t.Logf("SUMMARY kill -9 nats-server during reset: tries %d, killed while jsctl ran %d (at a change request %d, at a random moment %d), jsctl finished in the same run %d, changes left to recover %d, lost %d, changed %d",
		f.tries, killedDuringRun, kr.atRequest+ka.atRequest, kr.timed+ka.timed, f.finishedInRun, f.interrupted, f.lost, f.changed)
	if killedDuringRun == 0 {
		t.Errorf("no kill landed while jsctl ran: the test showed nothing")
	}
	if f.lost != 0 || f.changed != 0 {
		t.Errorf("lost %d, changed %d; want 0 and 0", f.lost, f.changed)
	}
}

// TestDeniedResetNeverEscalates: a user denied the consumer reset API gets
// exit 7 and nothing changes: no recreate fallback, the deliver policy,
// position and creation time stay.
func TestDeniedResetNeverEscalates(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	const auth = `authorization {
  users: [
    {user: ops, password: pw, permissions: {publish: {allow: [">"], deny: ["$JS.API.CONSUMER.RESET.>"]}}}
  ]
}`
	e := newEnv(t, natsproc.Options{Config: auth}, nats.UserInfo("ops", "pw"))
	e.auth = []string{"NATS_USER=ops", "NATS_PASSWORD=pw"}
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, e, "c", 20)
	ci := consumerInfo(t, e, "c")
	code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute", "--timeout", "1s")
	if code != 7 || !strings.Contains(errs, `permission denied: this user may not reset consumer "c" of stream "ORDERS" (the server refused a publish to "$JS.API.CONSUMER.RESET.ORDERS.c")`) {
		t.Fatalf("exit %d, want 7 naming the refused request:\n%s\n%s", code, out, errs)
	}
	after := consumerInfo(t, e, "c")
	if after.Config.DeliverPolicy != jetstream.DeliverAllPolicy || !after.Created.Equal(ci.Created) ||
		after.Delivered.Stream != 20 || after.AckFloor.Stream != 20 {
		t.Fatalf("consumer changed: policy %v, created %v (was %v), delivered %d, ack floor %d",
			after.Config.DeliverPolicy, after.Created, ci.Created, after.Delivered.Stream, after.AckFloor.Stream)
	}
	if n := e.unfinished(); n != 0 {
		t.Fatalf("%d intent records left", n)
	}
	t.Logf("SUMMARY denied reset: exit %d, %s", code, lastLine(errs))
}

// TestForcedResetLivePullerVerified: a reset forced under a live puller is
// verified from the server's reply, though the puller takes messages from
// the new position at once.
func TestForcedResetLivePullerVerified(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "live", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	cons, err := e.js.Consumer(e.ctx(), "ORDERS", "live")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack() }, jetstream.PullMaxMessages(10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	deadline := time.Now().Add(2 * time.Minute) // a bound, not a speed target: a loaded machine is slow
	for {
		ci := consumerInfo(t, e, "live")
		if ci.Delivered.Stream >= 50 && ci.NumWaiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live puller: delivered %d, waiting pull requests %d", ci.Delivered.Stream, ci.NumWaiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, errs := e.run("consumer", "reset", "ORDERS", "live", "--to-seq", "5", "--force", "--execute", "--json")
	if code != 0 || !strings.Contains(out, `"verified": true`) {
		t.Fatalf("exit %d, want 0 and verified:\n%s\n%s", code, out, errs)
	}
	t.Logf("SUMMARY forced reset with a live puller: verified; %s", strings.TrimSpace(grep(out, "delivered_since")))
}

func fetchAck(t *testing.T, e *env, name string, n int) {
	t.Helper()
	cons, err := e.js.Consumer(e.ctx(), "ORDERS", name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range b.Messages() {
		if err := m.DoubleAck(e.ctx()); err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("fetched %d, want %d", got, n)
	}
}

func consumerInfo(t *testing.T, e *env, name string) *jetstream.ConsumerInfo {
	t.Helper()
	cons, err := e.js.Consumer(e.ctx(), "ORDERS", name)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cons.Info(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func waitConnected(t *testing.T, nc *nats.Conn) {
	t.Helper()
	testserver.WaitFor(t, 30*time.Second, "the test's client to reconnect", nc.IsConnected)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func grep(s, word string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			return l
		}
	}
	return ""
}

// TestHalfWrittenConsumerSurvivesRestart: a server killed in the middle of
// a consumer create leaves the consumer's directory with its metadata file
// and no checksum (simulated here by removing the checksum). The server
// then skips it at start; a later create of that name keeps the old file
// and never writes the checksum, so the consumer is dropped again at the
// next restart unless jsctl has the server write its metadata once more.
func TestHalfWrittenConsumerSurvivesRestart(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{JetStream: "sync_interval: always"})
	names := e.richConsumers(1, false)
	before := e.configs(names)
	if code, out, errs := e.run("consumer", "reset", "ORDERS", names[0], "--to-seq", "5", "--execute"); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	e.srv.Kill()
	sum := filepath.Join(e.srv.StoreDir, "jetstream", "$G", "streams", "ORDERS", "obs", names[0], "meta.sum")
	if err := os.Remove(sum); err != nil {
		t.Fatal(err)
	}
	e.srv.Restart()
	waitConnected(t, e.nc)
	if len(e.configs(names)) != 0 {
		t.Fatal("the server loaded a consumer without its checksum: this test no longer shows anything")
	}
	// --to-previous rebuilds it from history ...
	if code, out, errs := e.run("consumer", "reset", "ORDERS", names[0], "--to-previous", "--execute"); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	// ... for good: it is still there after the next restart.
	e.srv.Kill()
	e.srv.Restart()
	waitConnected(t, e.nc)
	var f figures
	e.check(names, before, &f)
	t.Logf("SUMMARY half-written consumer directory: lost %d, changed %d", f.lost, f.changed)
}
