// Package chaos holds fault-injection tests that run jsctl and nats-server
// as real processes and kill them (kill -9) at random moments. jsctl is
// cmd/jsctl built as users build it (internal/jsctlbin), or, with
// JSCTL_TEST_RACE_CLI=1, the -race test binary itself (TestMain runs
// commands.Main when JSCTL_CHAOS_JSCTL is set); nats-server is built from
// the pinned module (internal/natsproc).
// go test -short skips the suite.
package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/jsctlbin"
	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsctlEnv, set to 1, makes the test binary run as jsctl.
const jsctlEnv = "JSCTL_CHAOS_JSCTL"

// jsctlBinEnv names the jsctl binary the tests run (TestMain sets it, but
// not under JSCTL_TEST_RACE_CLI=1).
const jsctlBinEnv = "JSCTL_CHAOS_BIN"

func TestMain(m *testing.M) {
	if os.Getenv(jsctlEnv) == "1" {
		os.Exit(commands.Main(os.Args[1:]))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		bin, remove, err := jsctlbin.BuildTemp()
		defer remove()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		os.Setenv(jsctlBinEnv, bin)
	}
	return m.Run()
}

// env is a nats-server process with stream ORDERS and a client of it.
type env struct {
	t    *testing.T
	srv  *natsproc.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	home string
	// auth is extra jsctl environment (NATS_USER, ...).
	auth []string
}

func newEnv(t *testing.T, o natsproc.Options, clientOpts ...nats.Option) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	srv := natsproc.Start(t, o)
	opts := append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}, clientOpts...)
	nc, err := nats.Connect(srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, nc: nc, js: js, home: t.TempDir()}
	_, err = js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		subject := "orders.eu"
		if i%2 == 1 {
			subject = "orders.us"
		}
		if _, err := js.Publish(e.ctx(), subject, fmt.Appendf(nil, "order %d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// command prepares `jsctl ARGS` against the server, with a clean
// environment (no saved contexts, no embedded server).
func (e *env) command(args ...string) *exec.Cmd {
	cmd := jsctlCommand(e.srv.URL(), e.home, args...)
	cmd.Env = append(cmd.Env, e.auth...)
	return cmd
}

// run runs jsctl to the end and returns its exit code and output.
func (e *env) run(args ...string) (int, string, string) {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		e.t.Fatalf("run jsctl %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// richConsumers creates n durable consumers with rich configurations;
// with inPlace, every one may be reset in place (deliver policy all).
func (e *env) richConsumers(n int, inPlace bool) []string {
	e.t.Helper()
	policies := []jetstream.DeliverPolicy{jetstream.DeliverAllPolicy, jetstream.DeliverNewPolicy, jetstream.DeliverLastPolicy, jetstream.DeliverByStartSequencePolicy}
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("worker%d", i)
		cfg := jetstream.ConsumerConfig{
			Durable: name, Description: fmt.Sprintf("worker %d: bills orders", i),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Duration(30+i) * time.Second,
			MaxDeliver: 5 + i, BackOff: []time.Duration{time.Second, time.Duration(2+i) * time.Second},
			MaxAckPending: 100 + i, MaxWaiting: 64, HeadersOnly: i%3 == 2,
			Metadata:      map[string]string{"team": "billing", "worker": fmt.Sprint(i)},
			DeliverPolicy: policies[i%len(policies)],
		}
		if inPlace {
			cfg.DeliverPolicy = jetstream.DeliverAllPolicy
		}
		if cfg.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
			cfg.OptStartSeq = 1
		}
		switch i % 3 {
		case 0:
			cfg.FilterSubjects = []string{"orders.eu", "orders.us"}
		case 1:
			cfg.FilterSubject = "orders.eu"
		}
		var err error
		if i%4 == 3 && !inPlace {
			cfg.DeliverSubject, cfg.FlowControl, cfg.IdleHeartbeat = "deliver."+name, true, 5*time.Second
			cfg.BackOff, cfg.MaxWaiting = nil, 0
			_, err = e.js.CreatePushConsumer(e.ctx(), "ORDERS", cfg)
		} else {
			_, err = e.js.CreateConsumer(e.ctx(), "ORDERS", cfg)
		}
		if err != nil {
			e.t.Fatalf("create consumer %s: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}

// configs reads every consumer's configuration as the server reports it,
// without the start position and the metadata the server adds; a missing
// consumer has none.
func (e *env) configs(names []string) map[string]any {
	e.t.Helper()
	out := map[string]any{}
	for _, n := range names {
		msg, err := e.nc.Request("$JS.API.CONSUMER.INFO.ORDERS."+n, nil, 10*time.Second)
		if err != nil {
			e.t.Fatalf("consumer info %s: %v", n, err)
		}
		var info struct {
			Config map[string]any `json:"config"`
			Error  *struct {
				Code int `json:"err_code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			e.t.Fatal(err)
		}
		if info.Error != nil {
			if info.Error.Code == int(jetstream.JSErrCodeConsumerNotFound) {
				continue
			}
			e.t.Fatalf("consumer info %s: %s", n, msg.Data)
		}
		for _, k := range []string{"deliver_policy", "opt_start_seq", "opt_start_time"} {
			delete(info.Config, k)
		}
		if md, ok := info.Config["metadata"].(map[string]any); ok {
			for k := range md {
				if strings.HasPrefix(k, "_nats.") {
					delete(md, k)
				}
			}
		}
		out[n] = info.Config
	}
	return out
}

// unfinished counts intent records left on the stream.
func (e *env) unfinished() int {
	e.t.Helper()
	u, err := reset.ListUnfinished(e.ctx(), e.js, "", "ORDERS")
	if err != nil {
		e.t.Fatal(err)
	}
	return len(u)
}

// figures are what a fault-injection test counts.
type figures struct {
	tries, interrupted, missingBefore, finishedInRun, lost, changed int
}

// check runs recover --execute and compares every consumer with before:
// each missing one counts as lost, each with another configuration as
// changed.
func (e *env) check(names []string, before map[string]any, f *figures) {
	e.t.Helper()
	f.missingBefore += len(names) - len(e.configs(names))
	e.recoverCompare(names, before, nil, f)
}

// recoverCompare runs recover --execute and compares every consumer with
// before: each missing one (that the test did not delete itself) counts as
// lost, each with another configuration as changed; no intent record may
// be left. It returns what recover printed.
func (e *env) recoverCompare(names []string, before map[string]any, deleted map[string]bool, f *figures) string {
	e.t.Helper()
	code, out, errs := e.run("consumer", "recover", "ORDERS", "--execute", "--json")
	if code != 0 {
		e.t.Fatalf("consumer recover exited %d:\n%s\n%s", code, out, errs)
	}
	var r reset.Recovery
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		e.t.Fatalf("recover --json: %v\n%s", err, out)
	}
	f.interrupted += len(r.Changes)
	after := e.configs(names)
	for _, n := range names {
		a, ok := after[n]
		switch {
		case !ok && !deleted[n]:
			f.lost++
			e.t.Errorf("try %d: consumer %s lost; the server's log ends:\n%s", f.tries, n, e.srv.LogTail(3000))
		case ok && !reflect.DeepEqual(before[n], a):
			f.changed++
			b1, _ := json.Marshal(before[n])
			b2, _ := json.Marshal(a)
			e.t.Errorf("try %d: consumer %s changed:\nbefore %s\nafter  %s", f.tries, n, b1, b2)
		}
	}
	if n := e.unfinished(); n != 0 {
		e.t.Errorf("try %d: %d intent records left after recover", f.tries, n)
	}
	return out
}

// timed runs a whole change once (not killed) and returns how long it took.
func (e *env) timed(args ...string) time.Duration {
	e.t.Helper()
	start := time.Now()
	code, out, errs := e.run(args...)
	if code != 0 {
		e.t.Fatalf("jsctl %v exited %d:\n%s\n%s", args, code, out, errs)
	}
	return time.Since(start)
}

func resetArgs(method string, seq int, extra ...string) []string {
	return append([]string{"consumer", "reset", "ORDERS", "--all", "--to-seq", fmt.Sprint(seq), "--method", method, "--execute", "--force"}, extra...)
}
