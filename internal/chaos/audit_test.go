package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// events reads every message of JSCTL_AUDIT with a plain client, decoded
// as events (none when the stream does not exist).
func (e *env) events() []audit.Event {
	e.t.Helper()
	s, err := e.js.Stream(e.ctx(), audit.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	st := s.CachedInfo().State
	var out []audit.Event
	for seq := st.FirstSeq; seq <= st.LastSeq && st.Msgs > 0; seq++ {
		m, err := s.GetMsg(e.ctx(), seq)
		if err != nil {
			e.t.Fatalf("audit message %d: %v", seq, err)
		}
		var ev audit.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			e.t.Fatalf("audit message %d: %v: %s", seq, err, m.Data)
		}
		if got := audit.Subject(ev.Action, ev.Stream.Name, ev.Consumer.Name); got != m.Subject {
			e.t.Errorf("event %s on subject %q, want %q", ev.ID, m.Subject, got)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != ev.ID {
			e.t.Errorf("event %s has Nats-Msg-Id %q", ev.ID, id)
		}
		out = append(out, ev)
	}
	return out
}

// seen is a consumer as a plain nats.go client sees it (nil: missing).
type seen struct {
	Delivered, AckFloor uint64
	Paused              bool
}

func (e *env) seen(stream, name string) *seen {
	e.t.Helper()
	c, err := e.js.Consumer(e.ctx(), stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	ci := c.CachedInfo()
	return &seen{Delivered: ci.Delivered.Stream, AckFloor: ci.AckFloor.Stream, Paused: ci.Paused}
}

func stateSeen(st *audit.State) *seen {
	if st == nil {
		return nil
	}
	return &seen{Delivered: st.Delivered, AckFloor: st.AckFloor, Paused: st.Paused}
}

func (s *seen) String() string {
	if s == nil {
		return "missing"
	}
	return fmt.Sprintf("delivered %d, ack floor %d, paused %v", s.Delivered, s.AckFloor, s.Paused)
}

func sameSeen(a, b *seen) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// must runs jsctl and fails the test unless it exits with code.
func (e *env) must(code int, args ...string) (string, string) {
	e.t.Helper()
	got, out, errs := e.run(args...)
	if got != code {
		e.t.Fatalf("jsctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out, errs)
	}
	return out, errs
}

// TestAuditEveryChange runs every changing command once against a
// nats-server process and checks that each wrote exactly one event per
// changed object, of its action, whose before and after are what a plain
// nats.go client saw before and after the command.
func TestAuditEveryChange(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	for _, name := range []string{"c", "d"} {
		if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		fetchAck(t, e, name, 20)
	}
	for _, name := range []string{"w", "f"} { // for jsctl consume
		if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: "ORDERS_M", Mirror: &jetstream.StreamSource{Name: "ORDERS"}}); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 30*time.Second, "the mirror to catch up", func() bool {
		s, err := e.js.Stream(e.ctx(), "ORDERS_M")
		return err == nil && s.CachedInfo().State.Msgs == 200
	})
	type object struct{ stream, consumer string }
	oc, od := object{"ORDERS", "c"}, object{"ORDERS", "d"}
	cases := []struct {
		args    []string
		action  audit.Action
		objects []object
	}{
		{[]string{"consumer", "reset", "ORDERS", "c", "--to-seq", "50", "--execute"}, audit.Reset, []object{oc}},
		{[]string{"consumer", "reset", "ORDERS", "c", "d", "--to-seq", "10", "--execute", "--reason", "replay"}, audit.Reset, []object{oc, od}},
		{[]string{"consumer", "pause", "ORDERS", "c", "--execute"}, audit.Pause, []object{oc}},
		{[]string{"consumer", "resume", "ORDERS", "c", "--execute"}, audit.Resume, []object{oc}},
		{[]string{"consumer", "snapshot", "save", "s1", "ORDERS", "c", "d"}, audit.SnapshotSave, []object{oc, od}},
		{[]string{"consumer", "reset", "ORDERS", "c", "--to-seq", "100", "--execute"}, audit.Reset, []object{oc}},
		{[]string{"consumer", "snapshot", "restore", "s1", "c", "--execute"}, audit.SnapshotRestore, []object{oc}},
		{[]string{"consumer", "snapshot", "rm", "s1", "--execute"}, audit.SnapshotRm, []object{oc, od}},
		{[]string{"consumer", "copy", "ORDERS", "c", "--to-stream", "ORDERS_M", "--execute"}, audit.Copy, []object{{"ORDERS_M", "c"}}},
		{[]string{"consume", "ORDERS", "w", "--exec", "exit 0", "--max", "5"}, "", nil},
		{[]string{"acks", "compact", "--scope", "ORDERS.w", "--execute"}, audit.AcksCompact, []object{{"ORDERS", "w"}}},
		{[]string{"acks", "forget", "--scope", "ORDERS.w", "--to-seq", "2", "--execute"}, audit.AcksForget, []object{{"ORDERS", "w"}}},
		{[]string{"consume", "ORDERS", "f", "--exec", "exit 3", "--max", "1", "--max-failures", "1"}, "", nil},
		{[]string{"acks", "retry", "--scope", "ORDERS.f", "--all-failed", "--exec", "exit 0", "--execute"}, audit.AcksRetry, []object{{"ORDERS", "f"}}},
	}
	total, changing := 0, 0
	for _, tc := range cases {
		before := map[object]*seen{}
		for _, o := range tc.objects {
			before[o] = e.seen(o.stream, o.consumer)
		}
		had := len(e.events())
		code := 0
		if tc.args[0] == "consume" && slicesContain(tc.args, "exit 3") {
			code = 1 // its message failed
		}
		e.must(code, tc.args...)
		evs := e.events()[had:]
		if tc.action == "" {
			if len(evs) != 0 {
				t.Errorf("jsctl %s changes nothing jsctl audits, but wrote %d events", strings.Join(tc.args, " "), len(evs))
			}
			continue
		}
		total += len(evs)
		changing++
		if len(evs) != len(tc.objects) {
			t.Errorf("jsctl %s: %d events, want %d (one per changed object): %+v", strings.Join(tc.args, " "), len(evs), len(tc.objects), evs)
			continue
		}
		for _, ev := range evs {
			o := object{ev.Stream.Name, ev.Consumer.Name}
			b, ok := before[o]
			if !ok {
				t.Errorf("jsctl %s: event for %v, which it does not change", strings.Join(tc.args, " "), o)
				continue
			}
			after := e.seen(o.stream, o.consumer)
			if ev.Action != tc.action || ev.V != 1 || ev.ID == "" || ev.JsctlVersion == "" || len(ev.Command) < 2 {
				t.Errorf("jsctl %s: event %+v", strings.Join(tc.args, " "), ev)
			}
			if ev.Outcome != audit.Verified {
				t.Errorf("jsctl %s: outcome %s (%s), want verified", strings.Join(tc.args, " "), ev.Outcome, ev.Error)
			}
			if !sameSeen(stateSeen(ev.Before), b) || !sameSeen(stateSeen(ev.After), after) {
				t.Errorf("jsctl %s on %v: event before %v, after %v; the client saw before %v, after %v",
					strings.Join(tc.args, " "), o, stateSeen(ev.Before), stateSeen(ev.After), b, after)
			}
			if ev.User == "" || ev.Host == "" || ev.NATS.Kind != "none" {
				t.Errorf("jsctl %s: identity %+v", strings.Join(tc.args, " "), ev.Identity)
			}
			if slicesContain(tc.args, "replay") && ev.Reason != "replay" {
				t.Errorf("jsctl %s: reason %q, want replay", strings.Join(tc.args, " "), ev.Reason)
			}
		}
	}
	// The reason is in history too.
	recs, err := reset.History(e.ctx(), e.js, "", "ORDERS", "d")
	if err != nil || len(recs) != 1 || recs[0].Reason != "replay" {
		t.Errorf("history of d: %+v, %v; want one record with reason replay", recs, err)
	}
	// A retried publish (its reply lost) is one event: the stream drops
	// the second copy by its Nats-Msg-Id.
	evs := e.events()
	last := evs[len(evs)-1]
	pub := audit.NewPublisher(e.js, audit.Options{})
	if err := pub.Publish(e.ctx(), &last); err != nil {
		t.Fatal(err)
	}
	if n := len(e.events()); n != len(evs) {
		t.Errorf("publishing event %s again left %d events, want %d", last.ID, n, len(evs))
	}
	out, _ := e.must(0, "audit", "ORDERS")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("audit table line of %d columns: %q", n, line)
		}
	}
	t.Logf("jsctl audit ORDERS after the session:\n%s", out)
	t.Logf("SUMMARY audit, every changing command: %d changing commands, %d events (one per changed object), each equal to the client's before and after", changing, total)
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestAuditKillBeforeEvent kills jsctl (kill -9) after the change was
// made and recorded and before its event is stored: a server mapping sends
// the event's publish to a subject the test holds (no stream takes it),
// and the test kills jsctl when it arrives. Then, the mapping gone,
// `consumer recover` writes the event: one, outcome recovered, naming the
// interrupted change.
func TestAuditKillBeforeEvent(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	const held = `mappings: { "jsctl.audit.>": "held.jsctl.audit.>" }`
	e := newEnv(t, natsproc.Options{Config: held, JetStream: "sync_interval: always"})
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, e, "c", 20)
	arrived := make(chan struct{}, 1)
	sub, err := e.nc.Subscribe("held.jsctl.audit.>", func(*nats.Msg) {
		select {
		case arrived <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cmd := e.command("consumer", "reset", "ORDERS", "c", "--to-seq", "5", "--execute", "--reason", "kill test")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
		_ = cmd.Process.Kill()
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no audit event was published within 60s:\n%s", out.String())
	}
	_ = cmd.Wait()
	_ = sub.Unsubscribe()
	if got := e.seen("ORDERS", "c"); got == nil || got.AckFloor != 4 {
		t.Fatalf("after the kill the consumer is %v, want ack floor 4 (the change made)", got)
	}
	if n := len(e.events()); n != 0 {
		t.Fatalf("the killed run stored %d events, want 0", n)
	}
	if e.unfinished() != 1 {
		t.Fatalf("the killed run left %d intent records, want 1", e.unfinished())
	}
	recs, err := reset.History(e.ctx(), e.js, "", "ORDERS", "c")
	if err != nil || len(recs) != 1 {
		t.Fatalf("history: %+v, %v", recs, err)
	}
	changeID := recs[0].ChangeID
	// The mapping goes: the server restarts without it.
	cfg, err := os.ReadFile(e.srv.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.srv.ConfigFile, []byte(strings.Replace(string(cfg), held, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv.Restart()
	waitConnected(t, e.nc)
	e.must(0, "consumer", "recover", "ORDERS", "--execute")
	evs := e.events()
	if len(evs) != 1 {
		t.Fatalf("after recover %d events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if ev.Outcome != audit.Recovered || ev.Recovers != changeID || ev.Action != audit.Recover || ev.Consumer.Name != "c" || ev.ID == changeID {
		t.Errorf("recover's event: %+v; want outcome recovered naming change %s", ev, changeID)
	}
	// A second recover finds nothing and writes nothing.
	e.must(0, "consumer", "recover", "ORDERS", "--execute")
	if n := len(e.events()); n != 1 {
		t.Errorf("a second recover left %d events, want 1", n)
	}
	t.Logf("SUMMARY audit, kill -9 between change and event, then recover: events %d (outcome %s, recovers %s)", len(evs), ev.Outcome, ev.Recovers)
}

// TestAuditRequiredDenied: with publishing on jsctl.audit.> denied,
// --audit required refuses before changing anything (exit 7); best-effort
// changes and warns; --require-reason without a reason refuses (exit 2).
func TestAuditRequiredDenied(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	const auth = `authorization {
  users: [
    {user: ops, password: pw, permissions: {publish: {allow: [">"], deny: ["jsctl.audit.>"]}}}
  ]
}`
	e := newEnv(t, natsproc.Options{Config: auth}, nats.UserInfo("ops", "pw"))
	e.auth = []string{"NATS_USER=ops", "NATS_PASSWORD=pw"}
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, e, "c", 20)
	before := consumerInfo(t, e, "c")
	unchanged := func(what string) {
		t.Helper()
		now := consumerInfo(t, e, "c")
		if now.AckFloor.Stream != before.AckFloor.Stream || now.Delivered.Stream != before.Delivered.Stream || !now.Created.Equal(before.Created) || now.Paused {
			t.Errorf("%s changed the consumer: ack floor %d -> %d, created %s -> %s, paused %v", what, before.AckFloor.Stream, now.AckFloor.Stream, before.Created, now.Created, now.Paused)
		}
	}
	refused := 0
	for _, args := range [][]string{
		{"consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute"},
		{"consumer", "pause", "ORDERS", "c", "--execute"},
		{"consumer", "snapshot", "save", "s", "ORDERS", "c"},
	} {
		_, errs := e.must(7, append([]string{"--audit", "required", "--timeout", "1s"}, args...)...)
		if !strings.Contains(errs, "--audit required") || !strings.Contains(errs, "nothing changed") {
			t.Errorf("jsctl --audit required %s: stderr %q", strings.Join(args, " "), errs)
		}
		unchanged("--audit required " + strings.Join(args, " "))
		refused++
	}
	if _, err := e.js.KeyValue(e.ctx(), "JSCTL_SNAPSHOTS"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("a refused snapshot save made the snapshot bucket (%v)", err)
	}
	for _, env := range [][]string{{"JSCTL_REQUIRE_REASON=1"}, nil} {
		args := []string{"consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute"}
		if env == nil {
			args = append([]string{"--require-reason"}, args...)
		}
		cmd := e.command(args...)
		cmd.Env = append(cmd.Env, env...)
		var errb strings.Builder
		cmd.Stderr = &errb
		_ = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(errb.String(), "--reason") {
			t.Errorf("require reason (%v %v): exit %d, %q; want 2 asking for --reason", env, args, code, errb.String())
		}
		unchanged("--require-reason")
		refused++
	}
	// Best effort: the change is made, the event is not, stderr says so.
	_, errs := e.must(0, "--timeout", "1s", "--reason", "late", "--require-reason", "consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute")
	if !strings.Contains(errs, "audit event") || !strings.Contains(errs, "not written") {
		t.Errorf("best effort, denied: stderr %q; want a warning that the event was not written", errs)
	}
	if n := len(e.events()); n != 0 {
		t.Errorf("denied publishing, yet %d events", n)
	}
	t.Logf("SUMMARY audit, refusals: %d refused commands changed nothing (--audit required exit 7, --require-reason exit 2); best effort under the deny changed and warned", refused)
}

// TestAuditFollow: `jsctl audit --follow --json` prints an event another
// jsctl process writes, then ends on SIGINT with exit 0, leaving no
// consumer on the audit stream.
func TestAuditFollow(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	e.must(0, "consumer", "pause", "ORDERS", "c", "--execute")
	follow := e.command("audit", "ORDERS", "--follow", "--json")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	follow.Stderr = &errb
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	testserver.KillAtEnd(t, follow)
	lines := make(chan audit.Event, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev audit.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				lines <- ev
			}
		}
		close(lines)
	}()
	next := func(what string) audit.Event {
		t.Helper()
		select {
		case ev, ok := <-lines:
			if !ok {
				t.Fatalf("audit --follow ended before %s: %s", what, errb.String())
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatalf("audit --follow printed no %s within 30s: %s", what, errb.String())
		}
		return audit.Event{}
	}
	if ev := next("stored event"); ev.Action != audit.Pause {
		t.Fatalf("first event %+v, want the pause", ev)
	}
	e.must(0, "consumer", "resume", "ORDERS", "c", "--execute", "--reason", "from another process")
	ev := next("new event")
	if ev.Action != audit.Resume || ev.Reason != "from another process" {
		t.Errorf("followed event %+v, want the resume with its reason", ev)
	}
	if err := follow.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = follow.Wait()
	if code := follow.ProcessState.ExitCode(); code != 0 {
		t.Errorf("audit --follow after SIGINT: exit %d (%v): %s", code, err, errb.String())
	}
	testserver.WaitFor(t, 30*time.Second, "the follower's consumer to go", func() bool {
		s, err := e.js.Stream(e.ctx(), audit.Stream)
		return err == nil && s.CachedInfo().State.Consumers == 0
	})
	t.Logf("SUMMARY audit --follow: printed the stored event and the one another jsctl process wrote (2 events); nothing left on the server")
}

// TestAuditNATSIdentity: the event names the NATS identity the connection
// authenticated as, for a creds (JWT) user, an nkey user and a
// user/password user, and never a secret.
func TestAuditNATSIdentity(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	dir := t.TempDir()
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, append(useed, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	skp, _ := nkeys.CreateAccount()
	spub, _ := skp.PublicKey()
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.SystemAccount = spub
	opJWT, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	sysJWT, err := jwt.NewAccountClaims(spub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	ac := jwt.NewAccountClaims(apub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1, MaxAckPending: -1}
	accJWT, err := ac.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	uc := jwt.NewUserClaims(upub)
	uc.Name = "audit-user"
	userJWT, err := uc.Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, useed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(dir, "user.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	const password = "pw-never-in-an-event"
	cases := []struct {
		name   string
		config string
		client nats.Option
		auth   []string
		flags  []string
		want   jsutil.NATSUser
	}{
		{"creds", fmt.Sprintf("operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %s\n  %s: %s\n}\n", opJWT, spub, spub, sysJWT, apub, accJWT),
			nats.UserCredentials(credsFile), []string{"NATS_CREDS=" + credsFile}, nil,
			jsutil.NATSUser{Kind: "jwt", JWTSub: upub, JWTName: "audit-user", Account: apub}},
		{"nkey", fmt.Sprintf("authorization { users: [ {nkey: %s} ] }", upub),
			mustNkeyOption(t, seedFile), []string{"NATS_NKEY=" + seedFile}, nil,
			jsutil.NATSUser{Kind: "nkey", NKey: upub}},
		{"user", fmt.Sprintf("authorization { users: [ {user: ops, password: %q} ] }", password),
			nats.UserInfo("ops", password), nil, []string{"--user", "ops", "--password", password},
			jsutil.NATSUser{Kind: "user", User: "ops"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, natsproc.Options{Config: tc.config}, tc.client)
			e.auth = tc.auth
			if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				t.Fatal(err)
			}
			e.must(0, append(tc.flags, "consumer", "pause", "ORDERS", "c", "--execute")...)
			evs := e.events()
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			if evs[0].NATS != tc.want {
				t.Errorf("NATS identity %+v, want %+v", evs[0].NATS, tc.want)
			}
			s, err := e.js.Stream(e.ctx(), audit.Stream)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.GetMsg(e.ctx(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(m.Data), password) || strings.Contains(string(m.Data), string(useed)) {
				t.Errorf("the event holds a secret: %s", m.Data)
			}
			t.Logf("SUMMARY audit identity %s: %d event naming %+v", tc.name, len(evs), evs[0].NATS)
		})
	}
}

func mustNkeyOption(t *testing.T, seedFile string) nats.Option {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// TestAuditLostReply: the reply to an event's publish is lost (a server
// mapping sends the publish to the test, which stores it in JSCTL_AUDIT
// and drops the first reply); jsctl publishes again with the same
// Nats-Msg-Id and the stream holds one event.
func TestAuditLostReply(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	const held = `mappings: { "jsctl.audit.>": "held.jsctl.audit.>" }`
	e := newEnv(t, natsproc.Options{Config: held})
	if _, err := e.js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: audit.Stream, Subjects: []string{"stored.jsctl.audit.>"}, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fwd, err := nats.Connect(e.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer fwd.Close()
	var attempts atomic.Int64
	sub, err := e.nc.Subscribe("held.jsctl.audit.>", func(m *nats.Msg) {
		n := attempts.Add(1)
		out := nats.NewMsg("stored." + strings.TrimPrefix(m.Subject, "held."))
		out.Data, out.Header = m.Data, m.Header
		reply, err := fwd.RequestMsg(out, 5*time.Second)
		if err != nil || n == 1 {
			return // the first reply is lost
		}
		_ = m.Respond(reply.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	_, errs := e.must(0, "consumer", "pause", "ORDERS", "c", "--execute", "--timeout", "1s")
	if strings.Contains(errs, "not written") {
		t.Errorf("the event was written, yet stderr says: %s", errs)
	}
	s, err := e.js.Stream(e.ctx(), audit.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 || attempts.Load() < 2 {
		t.Fatalf("%d publishes stored %d events, want at least 2 and 1", attempts.Load(), n)
	}
	m, err := s.GetMsg(e.ctx(), s.CachedInfo().State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := audit.Decode(m.Data)
	if err != nil || ev.Action != audit.Pause || m.Header.Get(jetstream.MsgIDHeader) != ev.ID {
		t.Errorf("stored event %+v (%v), Nats-Msg-Id %q", ev, err, m.Header.Get(jetstream.MsgIDHeader))
	}
	t.Logf("SUMMARY audit, lost reply: %d publishes of one event, %d stored", attempts.Load(), s.CachedInfo().State.Msgs)
}
