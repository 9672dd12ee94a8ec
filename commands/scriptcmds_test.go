package commands_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptServer is the JetStream server of one script. A restart keeps the
// store and the port, so NATS_URL stays valid.
type scriptServer struct {
	srv   *server.Server
	store string
	port  int
}

type serverKey struct{}

// scriptCommands lists the custom script commands. Each checks its own
// usage. Feature test files add theirs here.
func scriptCommands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"stream-add":              cmdStreamAdd,
		"fits":                    cmdFits,
		"pub":                     cmdPub,
		"msgtime":                 cmdMsgTime,
		"server-restart":          cmdServerRestart,
		"server-stop":             cmdServerStop,
		"server-start":            cmdServerStart,
		"completion-consumer-add": cmdCompletionConsumerAdd,
		"completion-acks-add":     cmdCompletionAcksAdd,
		"mask":                    cmdMask,
		"exit-code":               cmdExitCode,
		"humantime":               cmdHumanTime,
		"server-auth":             cmdServerAuth,
		"server-silent":           cmdServerSilent,
		"consumer-add":            cmdConsumerAdd,
		"consumer-fetch":          cmdConsumerFetch,
		"consumer-wait":           cmdConsumerWait,
		"consumer-bind":           cmdConsumerBind,
		"consumer-config":         cmdConsumerConfig,
		"kv-add":                  cmdKVAdd,
		"kv-put":                  cmdKVPut,
		"kv-rm":                   cmdKVRm,
		"consumer-rm":             cmdConsumerRm,
		"consumer-set-ack-wait":   cmdConsumerSetAckWait,
		"mask-who":                cmdMaskWho,
		"consumer-intent":         cmdConsumerIntent,
		"acks-wait":               cmdAcksWait,
		"stream-msg":              cmdStreamMsg,
		"stream-purge":            cmdStreamPurge,
		"consumer-waited":         cmdConsumerWaited,
		"stream-replica":          cmdStreamReplica,
		"stream-wait-msgs":        cmdStreamWaitMsgs,
	}
}

// setupScript starts a fresh server for the script and points the
// environment at it.
func setupScript(env *testscript.Env) error {
	store := filepath.Join(env.WorkDir, ".nats-store")
	s, err := testserver.New(store)
	if err != nil {
		return err
	}
	ss := &scriptServer{srv: s, store: store, port: s.Addr().(*net.TCPAddr).Port}
	env.Values[serverKey{}] = ss
	env.Values[waitKey{}] = map[string]*nats.Subscription{}
	env.Defer(func() {
		if ss.srv != nil {
			ss.srv.Shutdown()
			ss.srv.WaitForShutdown()
		}
	})
	home := filepath.Join(env.WorkDir, "home")
	env.Setenv("NATS_URL", s.ClientURL())
	env.Setenv("HOME", home)
	env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	env.Setenv("JSCTL_TZ", "UTC")
	env.Setenv("NATS_TIMEOUT", "5s")
	env.Setenv("GORACE", os.Getenv("GORACE")) // set by TestMain
	// Completion's default budget (0.8s for connect and lookups) is for a
	// person at a shell; a -race process on a loaded machine needs more.
	env.Setenv("JSCTL_COMPLETE_TIMEOUT", "20s")
	for _, k := range []string{"NATS_CONTEXT", "NATS_CREDS", "NATS_NKEY", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_CERT", "NATS_KEY", "NATS_CA", "NATS_JS_DOMAIN", "JSCTL_EMBEDDED"} {
		env.Setenv(k, "")
	}
	return nil
}

func scriptSrv(ts *testscript.TestScript) *scriptServer {
	return ts.Value(serverKey{}).(*scriptServer)
}

// scriptJS connects to the script's server; the connection is closed when
// the script ends.
func scriptJS(ts *testscript.TestScript) (*nats.Conn, jetstream.JetStream) {
	ss := scriptSrv(ts)
	if ss.srv == nil {
		ts.Fatalf("the server is stopped")
	}
	nc, err := nats.Connect(ss.srv.ClientURL())
	ts.Check(err)
	ts.Defer(nc.Close)
	js, err := jetstream.New(nc)
	ts.Check(err)
	return nc, js
}

func scriptCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// flagArgs splits args into --name=value / --name value options (listed in
// withValue) and positional arguments.
func flagArgs(ts *testscript.TestScript, args []string, withValue ...string) (map[string][]string, []string) {
	opts := map[string][]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		takes := false
		for _, w := range withValue {
			if w == name {
				takes = true
			}
		}
		if !takes {
			if hasVal {
				ts.Fatalf("flag --%s takes no value", name)
			}
			opts[name] = append(opts[name], "")
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				ts.Fatalf("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		opts[name] = append(opts[name], val)
	}
	return opts, pos
}

func optInt(ts *testscript.TestScript, opts map[string][]string, name string, def int) int {
	v, ok := opts[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v[len(v)-1])
	if err != nil {
		ts.Fatalf("--%s: %v", name, err)
	}
	return n
}

func optDur(ts *testscript.TestScript, opts map[string][]string, name string) time.Duration {
	v, ok := opts[name]
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v[len(v)-1])
	if err != nil {
		ts.Fatalf("--%s: %v", name, err)
	}
	return d
}

func optStr(opts map[string][]string, name, def string) string {
	if v, ok := opts[name]; ok {
		return v[len(v)-1]
	}
	return def
}

// cmdStreamAdd creates a stream:
//
//	stream-add NAME [--subjects a,b] [--storage file|memory] [--retention limits|interest|workqueue]
//	           [--replicas N] [--max-msgs N] [--max-age D] [--allow-direct]
func cmdStreamAdd(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "subjects", "storage", "retention", "replicas", "max-msgs", "max-age")
	if len(pos) != 1 {
		ts.Fatalf("usage: stream-add NAME [--subjects a,b] [--storage file|memory] [--retention limits|interest|workqueue] [--replicas N] [--max-msgs N] [--max-age D] [--allow-direct]")
	}
	cfg := jetstream.StreamConfig{
		Name:     pos[0],
		Subjects: strings.Split(optStr(opts, "subjects", strings.ToLower(pos[0])+".>"), ","),
		Replicas: optInt(ts, opts, "replicas", 1),
		MaxMsgs:  int64(optInt(ts, opts, "max-msgs", -1)),
		MaxAge:   optDur(ts, opts, "max-age"),
	}
	_, cfg.AllowDirect = opts["allow-direct"]
	switch st := optStr(opts, "storage", "file"); st {
	case "file":
		cfg.Storage = jetstream.FileStorage
	case "memory":
		cfg.Storage = jetstream.MemoryStorage
	default:
		ts.Fatalf("stream-add: unknown storage %q", st)
	}
	switch r := optStr(opts, "retention", "limits"); r {
	case "limits":
		cfg.Retention = jetstream.LimitsPolicy
	case "interest":
		cfg.Retention = jetstream.InterestPolicy
	case "workqueue":
		cfg.Retention = jetstream.WorkQueuePolicy
	default:
		ts.Fatalf("stream-add: unknown retention %q", r)
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	_, err := js.CreateStream(ctx, cfg)
	if neg {
		if err == nil {
			ts.Fatalf("stream-add %s succeeded unexpectedly", pos[0])
		}
		return
	}
	ts.Check(err)
}

// cmdPub publishes messages and records their stream sequences and times:
//
//	pub SUBJECT [--count N] [--data TEXT] [--header K=V]... [--msgid-prefix P] [--gap D] [--var NAME]
//
// The payload is TEXT, or "msg-<i>" (i from 1) when --data is absent.
// --gap D waits D between messages so their timestamps differ (spacing, not
// synchronisation). With --var NAME, after each message i the variables
// NAME<i>_SEQ and NAME<i> hold its sequence and stored time (RFC 3339 UTC,
// nanoseconds), and NAME_LAST_SEQ / NAME_LAST the last message's.
func cmdPub(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! pub")
	}
	opts, pos := flagArgs(ts, args, "count", "data", "data-escaped", "header", "header-escaped", "header-size", "msgid-prefix", "gap", "var")
	if len(pos) != 1 {
		ts.Fatalf("usage: pub SUBJECT [--count N] [--data TEXT | --data-escaped GO-ESCAPED] [--header K=V]... [--header-escaped K=GO-ESCAPED]... [--header-size K=BYTES]... [--msgid-prefix P] [--gap D] [--var NAME]")
	}
	count := optInt(ts, opts, "count", 1)
	gap := optDur(ts, opts, "gap")
	varName := optStr(opts, "var", "")
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	for i := 1; i <= count; i++ {
		if i > 1 && gap > 0 {
			time.Sleep(gap)
		}
		m := nats.NewMsg(pos[0])
		m.Data = []byte(optStr(opts, "data", fmt.Sprintf("msg-%d", i)))
		if v, ok := opts["data-escaped"]; ok {
			d, err := strconv.Unquote(`"` + v[len(v)-1] + `"`)
			ts.Check(err)
			m.Data = []byte(d)
		}
		for _, h := range opts["header"] {
			k, v, ok := strings.Cut(h, "=")
			if !ok {
				ts.Fatalf("pub: --header wants K=V, got %q", h)
			}
			m.Header.Add(k, v)
		}
		for _, h := range opts["header-escaped"] {
			k, v, ok := strings.Cut(h, "=")
			uv, err := strconv.Unquote(`"` + v + `"`)
			if !ok || err != nil {
				ts.Fatalf("pub: --header-escaped wants K=V with V in Go string escapes, got %q", h)
			}
			m.Header.Add(k, uv)
		}
		for _, h := range opts["header-size"] {
			k, v, ok := strings.Cut(h, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				ts.Fatalf("pub: --header-size wants K=BYTES, got %q", h)
			}
			m.Header.Add(k, strings.Repeat("x", n))
		}
		if p, ok := opts["msgid-prefix"]; ok {
			m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s%d", p[len(p)-1], i))
		}
		ack, err := js.PublishMsg(ctx, m)
		ts.Check(err)
		if varName != "" {
			t := storedTime(ts, js, ack.Stream, ack.Sequence)
			ts.Setenv(fmt.Sprintf("%s%d_SEQ", varName, i), strconv.FormatUint(ack.Sequence, 10))
			ts.Setenv(fmt.Sprintf("%s%d", varName, i), t)
			ts.Setenv(varName+"_LAST_SEQ", strconv.FormatUint(ack.Sequence, 10))
			ts.Setenv(varName+"_LAST", t)
		}
	}
}

func storedTime(ts *testscript.TestScript, js jetstream.JetStream, stream string, seq uint64) string {
	ctx, cancel := scriptCtx()
	defer cancel()
	s, err := js.Stream(ctx, stream)
	ts.Check(err)
	m, err := s.GetMsg(ctx, seq)
	ts.Check(err)
	return m.Time.UTC().Format(time.RFC3339Nano)
}

// cmdMsgTime sets VAR to the stored time of message SEQ of STREAM:
//
//	msgtime STREAM SEQ VAR
func cmdMsgTime(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: msgtime STREAM SEQ VAR")
	}
	seq, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	_, js := scriptJS(ts)
	ts.Setenv(args[2], storedTime(ts, js, args[0], seq))
}

// cmdServerStop stops the script's server (the store is kept).
func cmdServerStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: server-stop")
	}
	ss := scriptSrv(ts)
	if ss.srv != nil {
		ss.srv.Shutdown()
		ss.srv.WaitForShutdown()
		ss.srv = nil
	}
}

// cmdServerStart starts the script's server again on the same port and store.
func cmdServerStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: server-start")
	}
	ss := scriptSrv(ts)
	if ss.srv != nil {
		ts.Fatalf("server-start: the server is running")
	}
	s, err := testserver.New(ss.store, func(o *server.Options) { o.Port = ss.port })
	ts.Check(err)
	ss.srv = s
}

// cmdServerRestart stops and starts the script's server.
func cmdServerRestart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: server-restart")
	}
	cmdServerStop(ts, false, nil)
	cmdServerStart(ts, false, nil)
}

// scriptCondition adds the condition [missing:NAME]: NAME is not installed.
// Under CI=true a missing tool fails the script instead (.ci/run installs
// every tool the tests use), so `[missing:jq] skip` never hides a test there.
func scriptCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "missing:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if _, err := exec.LookPath(name); err == nil {
		return false, nil
	}
	if os.Getenv("CI") == "true" {
		return false, fmt.Errorf("%s is not installed (CI=true: .ci/run installs it)", name)
	}
	return true, nil
}
