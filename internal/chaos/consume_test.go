package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// consumeHandler logs "start SEQ RUN" and "end SEQ RUN" around a short piece
// of work (appends of one short line are atomic). RUN is the number of the
// jsctl process that ran it, passed in its environment.
const consumeHandler = `echo "start $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"; sleep 0.0$(( JSCTL_SEQ % 5 + 1 )); echo "end $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"`

// TestConsumeClusterLeaderKills runs three `jsctl consume` processes (8
// workers each, the default lease) on an R3 stream and R3 bucket of a
// 3-process nats-server cluster, and kills (kill -9) the stream's leader,
// the bucket's leader and the consumer's leader in turn, restarting each,
// then one jsctl process. Every message must run once: none twice, none
// never, except that the killed jsctl process's in-flight messages may run
// again (documented: a handler running when jsctl dies, or one whose done
// write was not yet confirmed, is not marked done; at most 2 × workers).
// It prints how long each election took.
func TestConsumeClusterLeaderKills(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	const n, procs, workers = 2000, 3, 8
	c := natsproc.StartCluster(t, 3, natsproc.Options{})
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// ctx bounds the set-up and the last reads, not the run: on a loaded
	// machine the whole test may take over 10 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	if _, err := testserver.CreateStream(ctx, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	// The first publish waits until the stream answers on this node.
	first := nats.NewMsg("orders.eu")
	first.Header.Set(nats.MsgIdHdr, "key-1")
	first.Data = []byte("order 1")
	if _, err := testserver.Publish(ctx, js, first); err != nil {
		t.Fatal(err)
	}
	var futs []jetstream.PubAckFuture
	for i := 2; i <= n; i++ {
		m := nats.NewMsg("orders.eu")
		m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("key-%d", i))
		m.Data = fmt.Appendf(nil, "order %d", i)
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("publish timed out")
		}
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1000, Replicas: 3,
	}); err != nil {
		t.Fatal(err)
	}

	// jsctl starts against a stream and a consumer that answer: on a
	// loaded machine a just-created R3 consumer may have no leader yet,
	// and a consume that cannot read its consumer exits at once.
	testserver.WaitFor(t, time.Minute, "leaders of the stream and the consumer", func() bool {
		return leaderName(nc, "ORDERS", "") != "" && leaderName(nc, "ORDERS", "c") != ""
	})

	log := filepath.Join(t.TempDir(), "handled.log")
	home := t.TempDir()
	// outs keeps what each jsctl printed, for failure messages; exited
	// says which runs ended on their own (they run until the test stops
	// them).
	var outs []*testserver.SyncBuffer
	var exitMu sync.Mutex
	exited := map[int]error{}
	killedByTest := map[int]bool{}
	type proc struct {
		cmd    *exec.Cmd
		run    int
		waited chan struct{} // closed once it has ended
	}
	start := func(run int) proc {
		cmd := jsctlCommand(c.URLs(), home, "consume", "ORDERS", "c", "--workers", strconv.Itoa(workers), "--exec", consumeHandler)
		cmd.Env = append(cmd.Env, "HANDLER_LOG="+log, "RUN_ID="+strconv.Itoa(run))
		out := &testserver.SyncBuffer{}
		outs = append(outs, out)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		go func() {
			err := cmd.Wait()
			exitMu.Lock()
			if !killedByTest[run] {
				exited[run] = err
			}
			exitMu.Unlock()
			close(waited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-waited
		})
		return proc{cmd: cmd, run: run, waited: waited}
	}
	// stop sends sig to p as the test's own doing and waits for its end.
	stop := func(p proc, sig os.Signal) {
		exitMu.Lock()
		killedByTest[p.run] = true
		exitMu.Unlock()
		_ = p.cmd.Process.Signal(sig)
		<-p.waited
	}
	var cmds []proc
	for i := 1; i <= procs; i++ {
		cmds = append(cmds, start(i))
	}
	dump := func() {
		for i, o := range outs {
			t.Logf("jsctl run %d printed:\n%s", i+1, tail(o.String(), 3000))
		}
	}
	// checkAlive fails the test at once when a jsctl ended on its own.
	checkAlive := func() {
		t.Helper()
		exitMu.Lock()
		defer exitMu.Unlock()
		for run, err := range exited {
			dump()
			t.Fatalf("jsctl run %d ended on its own (%v); its output is above", run, err)
		}
	}
	ended := func() int { _, ends := handlerRuns(t, log); return len(ends) }
	waitEnded := func(at int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for ended() < at {
			checkAlive()
			if time.Now().After(deadline) {
				dump()
				t.Fatalf("timed out waiting for %d messages to end (%d did)", at, ended())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// done counts the done records: a message whose handler ran but whose
	// jsctl died before recording it is not done until it runs again. Each
	// count has a minute of its own (not what is left of ctx); lastErr is
	// why the last count failed.
	var lastErr error
	done := func() int {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := acks.OpenExisting(cctx, js, acks.DefaultBucket)
		if err != nil {
			lastErr = err
			return 0
		}
		recs, err := st.List(cctx, acks.Filter{Scope: acks.DefaultScope("ORDERS", "c"), State: acks.StateDone})
		if err != nil {
			lastErr = err
			return 0
		}
		return len(recs)
	}

	// Kill the leaders in turn; measure how long until the asset has a
	// leader again.
	type kill struct {
		what, stream, consumer string
	}
	var elections []string
	for i, k := range []kill{{"stream ORDERS", "ORDERS", ""}, {"bucket JSCTL_ACKS", "KV_JSCTL_ACKS", ""}, {"consumer c", "ORDERS", "c"}} {
		waitEnded((i + 1) * n / 5)
		old, err := c.KillLeader(nc, k.stream, k.consumer, 30*time.Second)
		if err != nil {
			t.Fatalf("kill the leader of the %s: %v", k.what, err)
		}
		killed := time.Now()
		for {
			if l := leaderName(nc, k.stream, k.consumer); l != "" && l != old.Name {
				break
			}
			if time.Since(killed) > time.Minute {
				t.Fatalf("no new leader of the %s within a minute", k.what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		elections = append(elections, fmt.Sprintf("%s: leader %s killed, new leader after %v", k.what, old.Name, time.Since(killed).Round(10*time.Millisecond)))
		old.Restart()
	}

	// Kill one jsctl process mid-run and start another in its place: only
	// the messages it was running may run again.
	waitEnded(4 * n / 5)
	stop(cmds[0], syscall.SIGKILL)
	cmds[0] = start(procs + 1)

	waitEnded(n)
	t.Logf("every message ran; %d done records so far", done())
	deadline := time.Now().Add(3 * time.Minute)
	for done() < n {
		checkAlive()
		if time.Now().After(deadline) {
			dump()
			t.Fatalf("timed out waiting for %d done records (%d; last error counting them: %v)", n, done(), lastErr)
		}
		time.Sleep(time.Second)
	}
	checkAlive()
	for _, p := range cmds {
		stop(p, syscall.SIGTERM)
	}

	starts, ends := handlerRuns(t, log)
	twice, never, repeated := 0, 0, 0
	var examples []string // of messages that ran twice or never, for the failure message
	for seq := 1; seq <= n; seq++ {
		s := starts[seq]
		switch {
		case len(ends[seq]) == 0:
			never++
		case len(s) == 2 && s[0] == 1 && s[1] != 1:
			repeated++ // the killed process ran it first: in flight at the kill
			continue
		case len(s) > 1:
			twice++
		default:
			continue
		}
		if len(examples) < 10 {
			examples = append(examples, fmt.Sprintf("message %d: started by runs %v, ended by runs %v", seq, s, ends[seq]))
		}
	}
	if len(examples) > 0 {
		t.Logf("runs of the messages that ran twice or never (first 10; run 1 was killed, run %d replaced it):\n%s", procs+1, strings.Join(examples, "\n"))
	}
	for _, e := range elections {
		t.Log(e)
	}
	inFlight := 2 * workers
	t.Logf("%d keys, %d jsctl consume processes × %d workers, default lease, leaders of the stream, the bucket and "+
		"the consumer killed in turn: %d ran twice, %d never ran; the jsctl process killed mid-run left %d messages "+
		"in flight, which ran again (at most %d: its handlers and unconfirmed done writes)", n, procs, workers, twice, never, repeated, inFlight)
	if twice != 0 || never != 0 || repeated > inFlight {
		t.Fatalf("promised 0 twice, 0 never and at most %d repeats: %d twice, %d never, %d repeats", inFlight, twice, never, repeated)
	}
	// consume created the bucket with the stream's replicas.
	kv, err := js.KeyValue(ctx, "JSCTL_ACKS")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
		t.Errorf("the bucket consume created has %d replicas, want the stream's 3", r)
	}
}

// handlerRuns reads the handler log: for each sequence, the runs (jsctl
// process numbers) that started and that ended it, in the log's order.
func handlerRuns(t *testing.T, log string) (starts, ends map[int][]int) {
	t.Helper()
	starts, ends = map[int][]int{}, map[int][]int{}
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		seq, err1 := strconv.Atoi(f[1])
		run, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		switch f[0] {
		case "start":
			starts[seq] = append(starts[seq], run)
		case "end":
			ends[seq] = append(ends[seq], run)
		}
	}
	return starts, ends
}

// leaderName is the name of the node leading a stream (consumer "") or a
// consumer, "" when none answers within 250ms: short waits, so an election
// is timed to a fraction of a second.
func leaderName(nc *nats.Conn, stream, consumer string) string {
	subject := "$JS.API.STREAM.INFO." + stream
	if consumer != "" {
		subject = "$JS.API.CONSUMER.INFO." + stream + "." + consumer
	}
	msg, err := nc.Request(subject, nil, 250*time.Millisecond)
	if err != nil {
		return ""
	}
	var info struct {
		Cluster struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if json.Unmarshal(msg.Data, &info) != nil {
		return ""
	}
	return info.Cluster.Leader
}

// jsctlCommand prepares `jsctl ARGS` (the binary TestMain built, or the
// test binary) against url with a clean environment (no saved contexts, no
// embedded server).
func jsctlCommand(url, home string, args ...string) *exec.Cmd {
	bin := os.Getenv(jsctlBinEnv)
	if bin == "" {
		bin = os.Args[0]
	}
	cmd := exec.Command(bin, args...)
	var environ []string
	// Built with -race, a process sleeps a second before it exits
	// (GORACE atexit_sleep_ms): not here, where kills land at random.
	race := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GORACE="):
			race = strings.TrimPrefix(kv, "GORACE=") + " " + race
		case !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "JSCTL_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME="):
			environ = append(environ, kv)
		}
	}
	cmd.Env = append(environ, jsctlEnv+"=1", "GORACE="+race, "NATS_URL="+url, "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "JSCTL_TZ=UTC")
	return cmd
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
