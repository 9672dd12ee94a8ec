package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The permissions table of docs/permissions.md is measured by
// TestPermissionsMeasured: every path of every command (permPaths) runs on
// one real nats-server process, on a stream with allow_direct and on one
// without, each as its own user. A subscriber on ">" records what each run
// publishes (runs are one at a time; a run ends when the server has closed
// its connections, so all it sent has been routed).
//
//   - With -update every user may publish anywhere, and the table is what
//     the runs published.
//   - Without, each user holds exactly its command's row of the page
//     (with the run's stream and consumer names): a run the server refused
//     anything (a permissions violation in the server's log for that user)
//     fails, naming the subjects, so a row that lacks a subject a path
//     needs fails; and the page's rows must equal what the runs published,
//     so a row that holds a subject no path uses fails too.

// permPath is one way of running a command.
type permPath struct {
	cmd  string // the command: its row of the table
	name string // the path, as the table names it
	// args follow the connection flags; {S} is the stream, {R} the replica
	// stream, {DL} the dead-letter subject, {URL} the server.
	args []string
	// setup prepares the run as the administrator.
	setup func(t *testing.T, f *permFixture, r *permRun)
	// firstUse runs it with none of jsctl's buckets (else all exist).
	firstUse bool
	// want is the exit code (0 unless set); expect, when set, must appear
	// in the run's stdout or stderr (what shows the path was the one taken).
	want   int
	expect string
}

// permRun is one path on one stream.
type permRun struct {
	path   *permPath
	direct bool
	user   string
	stream string // S
	names  map[string]string
}

func (r *permRun) replica() string { return "R" + r.stream }
func (r *permRun) deadLetter() string {
	return "dl." + strings.ToLower(r.stream)
}

// placeholders maps the run's concrete names to the table's placeholders.
func (r *permRun) placeholders() map[string]string {
	return map[string]string{
		r.stream: "<stream>", r.replica(): "<stream>", "DL" + r.stream: "<stream>",
		"bill": "<consumer>", "other": "<consumer>",
	}
}

type permFixture struct {
	srv    *natsproc.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	update bool

	mu      sync.Mutex
	current map[string]bool
	// synced receives each sync mark the spy has handled (see sync).
	synced chan string
}

// syncSubject is the subject of the spy's sync marks.
const syncSubject = "_JSCTL_SPY_SYNC"

// sync returns once the spy has handled everything the server routed to
// it before now: a mark published on this connection comes after all of
// it, and the spy's handler takes messages in order (a Flush alone leaves
// the handler behind).
func (f *permFixture) sync(t *testing.T) {
	t.Helper()
	mark := nats.NewInbox()
	if err := f.nc.Publish(syncSubject, []byte(mark)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-f.synced:
			if got == mark {
				return
			}
		case <-timeout:
			t.Fatal("the spy did not handle its sync mark within a minute")
		}
	}
}

// TestPermissionsMeasured measures docs/permissions.md's table (see
// above); go test ./commands -run TestPermissionsMeasured -update rewrites it.
func TestPermissionsMeasured(t *testing.T) {
	t.Parallel() // mostly waits on a server process
	if testing.Short() {
		t.Skip("runs every command path on a server process")
	}
	paths := permPaths()
	var runs []*permRun
	for i := range paths {
		for _, direct := range []bool{true, false} {
			v := "N"
			if direct {
				v = "D"
			}
			r := &permRun{path: &paths[i], direct: direct, user: fmt.Sprintf("u%d%s", i, v), stream: fmt.Sprintf("P%d%s", i, v)}
			runs = append(runs, r)
		}
	}
	doc := readPermsDoc(t)
	var users []string
	for _, r := range runs {
		perm := `publish: {allow: [">"]}, subscribe: {allow: [">"]}`
		if !*update {
			row, ok := doc[r.path.cmd]
			if !ok {
				t.Fatalf("docs/permissions.md has no row for jsctl %s (go test ./commands -run TestPermissionsMeasured -update)", r.path.cmd)
			}
			var allow []string
			for _, s := range expandRow(row, r) {
				allow = append(allow, fmt.Sprintf("%q", s))
			}
			perm = `publish: {allow: [` + strings.Join(allow, ", ") + `]}, subscribe: {allow: ["_INBOX.>"]}`
		}
		users = append(users, fmt.Sprintf("    {user: %s, password: pw, permissions: {%s}}", r.user, perm))
	}
	// Each subject of each row, taken away from one path that needs it
	// (checked without -update): that path must then be refused it and say
	// so, naming the refused subject.
	var lacking []*lackRun
	if !*update && *permsLacking {
		lacking = lackRuns(t, runs)
		for _, l := range lacking {
			var allow []string
			for _, s := range expandRow(l.rest, l.run) {
				allow = append(allow, fmt.Sprintf("%q", s))
			}
			users = append(users, fmt.Sprintf("    {user: %s, password: pw, permissions: {publish: {allow: [%s]}, subscribe: {allow: [\"_INBOX.>\"]}}}", l.run.user, strings.Join(allow, ", ")))
		}
	}
	srv := natsproc.Start(t, natsproc.Options{Config: "authorization {\n  users = [\n    {user: admin, password: pw}\n    {user: setup, password: pw}\n    {user: probe, password: pw, permissions: {publish: {allow: [nothing]}, subscribe: {allow: [\"_INBOX.>\"]}}}\n" + strings.Join(users, "\n") + "\n  ]\n}"})
	f := &permFixture{srv: srv, update: *update, synced: make(chan string, 1)}
	var err error
	if f.nc, err = nats.Connect(srv.URL(), nats.UserInfo("admin", "pw")); err != nil {
		t.Fatal(err)
	}
	defer f.nc.Close()
	if f.js, err = jetstream.New(f.nc); err != nil {
		t.Fatal(err)
	}
	if _, err := f.nc.Subscribe(">", func(m *nats.Msg) {
		if m.Subject == syncSubject {
			f.synced <- string(m.Data)
			return
		}
		if strings.HasPrefix(m.Reply, "$JS.ACK.") {
			return // a delivery (it bears the stream's subject), not a publish
		}
		f.mu.Lock()
		if f.current != nil {
			f.current[m.Subject] = true
		}
		f.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	// The check of the server's log can fail: a user who may publish
	// nothing is refused, and the log says so.
	before := f.logSize(t)
	runJSCTL(t, "-s", srv.URL(), "--user", "probe", "--password", "pw", "--timeout", "2s", "--retry-for", "1s", "seek", "PROBE", "now")
	f.waitClosed(t, "probe")
	if v := f.violations(t, before, "probe"); len(v) == 0 || !strings.Contains(strings.Join(v, " "), "$JS.API.STREAM.INFO.PROBE") {
		t.Fatalf("the server's log shows no refusal of the probe's request (%v): the check of what each path is refused cannot work\n%s", v, srv.LogTail(3000))
	}
	measured := map[string]map[string][]string{} // command -> pattern -> paths
	paths_ := map[string][]string{}              // command -> paths, in order
	for _, r := range runs {
		used := f.runPath(t, r)
		cmd := r.path.cmd
		if measured[cmd] == nil {
			measured[cmd] = map[string][]string{}
		}
		label := r.path.name
		if r.direct {
			label += " (allow_direct)"
		}
		paths_[cmd] = append(paths_[cmd], label)
		for p := range used {
			measured[cmd][p] = append(measured[cmd][p], label)
		}
	}
	for _, l := range lacking {
		f.runLacking(t, l)
	}
	want := permsTable(measured, paths_)
	path := filepath.Join("..", "docs", "permissions.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i, j := strings.Index(page, permsBegin), strings.Index(page, permsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of its generated table", path)
	}
	got := strings.TrimPrefix(page[i+len(permsBegin):j], "\n")
	if got == want {
		return
	}
	if *update {
		page = page[:i+len(permsBegin)] + "\n" + want + page[j:]
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not list what the paths publish to (a row holds a subject no path used, or lacks one); run go test ./commands -run TestPermissionsMeasured -update\n%s", path, cellDiff(got, want))
}

// permsLacking runs, after the measurement, every path again without each
// subject of its row in turn (long: a few minutes).
var permsLacking = flag.Bool("perms.lacking", false, "TestPermissionsMeasured: also run each path without each subject of its row")

const (
	permsBegin = "<!-- generated by TestPermissionsMeasured (go test ./commands -run TestPermissionsMeasured -update) -->"
	permsEnd   = "<!-- end of generated table -->"
)

// runPath runs one path as its user and returns the patterns of what it
// published.
func (f *permFixture) runPath(t *testing.T, r *permRun) map[string]bool {
	t.Helper()
	ctx := testserver.Context(t, 2*time.Minute)
	if err := f.makeStream(ctx, r.stream, r.direct); err != nil {
		t.Fatalf("%s: %v", r.path.name, err)
	}
	if r.path.firstUse {
		f.noBuckets(t, ctx)
	} else {
		f.makeBuckets(t, ctx)
	}
	if r.path.setup != nil {
		r.path.setup(t, f, r)
	}
	f.sync(t) // the spy has handled all the setup sent
	logBefore := f.logSize(t)
	f.mu.Lock()
	f.current = map[string]bool{}
	f.mu.Unlock()
	args := append([]string{"-s", f.srv.URL(), "--user", r.user, "--password", "pw", "--timeout", "5s", "--retry-for", "1s"}, r.expand(f, r.path.args)...)
	code, stdout, stderr, took := runJSCTL(t, args...)
	f.waitClosed(t, r.user)
	f.sync(t)
	f.mu.Lock()
	seen := f.current
	f.current = nil
	f.mu.Unlock()
	what := fmt.Sprintf("jsctl %s [%s, allow_direct %v]", strings.Join(r.expand(f, r.path.args), " "), r.path.name, r.direct)
	if v := f.violations(t, logBefore, r.user); len(v) > 0 {
		t.Errorf("%s: the server refused %s (exit %d)\nstderr: %s", what, strings.Join(v, ", "), code, stderr)
	}
	if code != r.path.want {
		t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", what, code, r.path.want, stdout, stderr)
	}
	if strings.Contains(stderr, "permission denied") || strings.Contains(stderr, "refused a publish") {
		t.Errorf("%s: a refusal on stderr: %s", what, stderr)
	}
	if r.path.expect != "" && !strings.Contains(stdout+stderr, r.path.expect) {
		t.Errorf("%s: took another path than %q\nstdout: %s\nstderr: %s", what, r.path.expect, stdout, stderr)
	}
	if took > 30*time.Second {
		t.Errorf("%s took %s", what, took)
	}
	out := map[string]bool{}
	for subj := range seen {
		if p := r.pattern(subj); p != "" {
			out[p] = true
		}
	}
	// A watch of a bucket (nats.go's ordered consumer) is deleted when the
	// watch stops, by a request nats.go sends on its own, which may or
	// may not leave before the connection closes: a run that watched a
	// bucket needs the delete.
	for p := range out {
		if rest, ok := strings.CutPrefix(p, "$JS.API.CONSUMER.CREATE.KV_"); ok && strings.HasSuffix(rest, ".*.>") {
			out["$JS.API.CONSUMER.DELETE.KV_"+strings.TrimSuffix(rest, ".>")] = true
		}
	}
	return out
}

func (r *permRun) expand(f *permFixture, args []string) []string {
	rep := strings.NewReplacer("{S}", r.stream, "{s}", strings.ToLower(r.stream), "{R}", r.replica(), "{DL}", r.deadLetter(), "{URL}", f.srv.URL(), "{USER}", r.user)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = rep.Replace(a)
	}
	return out
}

// makeStream makes stream name (subjects name.eu and name.us, 20
// messages alternating, starting with eu) with consumer bill (all
// subjects, explicit acks, nothing delivered).
func (f *permFixture) makeStream(ctx context.Context, name string, direct bool) error {
	subj := strings.ToLower(name)
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj + ".>"}, AllowDirect: direct}); err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		region := "eu"
		if i%2 == 1 {
			region = "us"
		}
		if _, err := f.js.Publish(ctx, subj+"."+region, []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			return err
		}
	}
	_, err := f.js.CreateConsumer(ctx, name, jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy})
	return err
}

// setupRun runs a jsctl command line as user setup (who may do
// anything), which must succeed, and waits until its connections closed.
func (f *permFixture) setupRun(t *testing.T, args ...string) {
	t.Helper()
	f.setupRunCode(t, 0, args...)
}

func (f *permFixture) setupRunCode(t *testing.T, want int, args ...string) {
	t.Helper()
	code, stdout, stderr, _ := runJSCTL(t, append([]string{"-s", f.srv.URL(), "--user", "setup", "--password", "pw", "--timeout", "5s"}, args...)...)
	f.waitClosed(t, "setup")
	if code != want {
		t.Fatalf("setup: jsctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout, stderr)
	}
}

// jsctlBuckets are the streams of jsctl's own: its buckets' and the audit
// trail's.
var jsctlBuckets = []string{"KV_JSCTL_ACKS", "KV_JSCTL_RESET_INTENTS", "KV_JSCTL_RESET_HISTORY", "KV_JSCTL_SNAPSHOTS", "JSCTL_AUDIT"}

// noBuckets deletes jsctl's buckets.
func (f *permFixture) noBuckets(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, b := range jsctlBuckets {
		if err := f.js.DeleteStream(ctx, b); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatal(err)
		}
	}
}

// makeBuckets has jsctl make its buckets where they are missing (as the
// user setup, on stream SETUP).
func (f *permFixture) makeBuckets(t *testing.T, ctx context.Context) {
	t.Helper()
	missing := false
	for _, b := range jsctlBuckets {
		if _, err := f.js.Stream(ctx, b); errors.Is(err, jetstream.ErrStreamNotFound) {
			missing = true
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !missing {
		return
	}
	if _, err := f.js.Stream(ctx, "SETUP"); errors.Is(err, jetstream.ErrStreamNotFound) {
		if err := f.makeStream(ctx, "SETUP", false); err != nil {
			t.Fatal(err)
		}
	}
	f.setupRun(t, "consumer", "reset", "SETUP", "bill", "--to-seq", "1", "--execute", "--yes")
	f.setupRun(t, "consumer", "snapshot", "save", "setup", "SETUP", "bill")
	f.setupRun(t, "consume", "SETUP", "bill", "--exec", "true", "--max", "1")
	f.setupRun(t, "consumer", "snapshot", "rm", "setup", "--yes")
}

// waitClosed waits until the server has no connection of user open: it
// has then routed everything they sent (it reads a connection's data to its
// end before closing it).
func (f *permFixture) waitClosed(t *testing.T, user string) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/connz?user=%s", f.srv.HTTPPort, user)
	testserver.WaitFor(t, time.Minute, "the connections of "+user+" to close", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var c struct {
			NumConns int `json:"num_connections"`
		}
		return json.NewDecoder(resp.Body).Decode(&c) == nil && c.NumConns == 0
	})
}

func (f *permFixture) logSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(f.srv.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// violationRE is a line of the server's log reporting a refusal:
// `... - "<client>" - "<account>/user:<user>" - Publish Violation - Subject "<subject>"`.
var violationRE = regexp.MustCompile(`(?m)^.*/user:([^"/]+)" - (Publish|Subscription) Violation - (?:Subject|Reply) "([^"]+)".*$`)

// violations lists what the server's log says it refused user since
// offset.
func (f *permFixture) violations(t *testing.T, offset int64, user string) []string {
	t.Helper()
	b, err := os.ReadFile(f.srv.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range violationRE.FindAllStringSubmatch(string(b[offset:]), -1) {
		if m[1] == user {
			out = append(out, strings.ToLower(m[2])+" to "+m[3])
		}
	}
	return out
}

// pattern turns a subject a run published to into the table's permission
// ("" for subjects that need none: replies).
func (r *permRun) pattern(subj string) string {
	names := r.placeholders()
	name := func(tok string) string {
		if p, ok := names[tok]; ok {
			return p
		}
		return tok
	}
	tok := strings.Split(subj, ".")
	switch {
	case strings.HasPrefix(subj, "_INBOX."), strings.HasPrefix(subj, "$JS.EVENT."), strings.HasPrefix(subj, "$SYS."):
		return ""
	case strings.HasPrefix(subj, "$JS.M."), strings.HasPrefix(subj, "$JS.S."):
		return "" // the server's own mirror and source traffic
	case subj == r.deadLetter():
		return "<dead-letter subject>"
	case strings.HasPrefix(subj, "jsctl.audit."):
		return "jsctl.audit.>" // the audit trail's events
	case tok[0] == "$KV" && len(tok) > 2:
		return "$KV." + tok[1] + ".>"
	case tok[0] == "$JS" && len(tok) > 3 && tok[1] == "FC":
		return "$JS.FC." + name(tok[2]) + ".>" // an ordered consumer's flow control
	case tok[0] == "$JS" && len(tok) > 3 && tok[1] == "ACK":
		c, ok := names[tok[3]]
		if !ok {
			c = "*"
		}
		return "$JS.ACK." + name(tok[2]) + "." + c + ".>"
	case tok[0] != "$JS" || len(tok) < 3 || tok[1] != "API":
		return "<user subject: " + subj + ">"
	}
	// $JS.API.VERB...: the verb's uppercase tokens, then the stream, then
	// (for consumers) the consumer; what follows is a filter or a key.
	out := []string{"$JS", "API"}
	i := 2
	for i < len(tok) && apiVerbs[tok[i]] {
		out = append(out, tok[i])
		i++
	}
	verb := strings.Join(out[2:], ".")
	if i < len(tok) {
		out = append(out, name(tok[i]))
		i++
	}
	if i < len(tok) && strings.HasPrefix(verb, "CONSUMER.") && verb != "CONSUMER.LIST" && verb != "CONSUMER.NAMES" {
		if p, ok := names[tok[i]]; ok {
			out = append(out, p)
		} else {
			out = append(out, "*") // a generated name: the library's own consumers
		}
		i++
	}
	if i < len(tok) {
		out = append(out, ">")
	}
	return strings.Join(out, ".")
}

// apiVerbs are the tokens of JetStream API subjects before the stream.
var apiVerbs = map[string]bool{
	"INFO": true, "STREAM": true, "CONSUMER": true, "DIRECT": true, "GET": true, "MSG": true, "NEXT": true,
	"CREATE": true, "DELETE": true, "UPDATE": true, "DURABLE": true, "NAMES": true, "LIST": true,
	"PAUSE": true, "RESET": true, "PURGE": true, "LEADER": true, "STEPDOWN": true, "SNAPSHOT": true,
	"RESTORE": true, "PEER": true, "REMOVE": true, "ACCOUNT": true, "META": true, "SERVER": true, "UNPIN": true,
}

// expandRow turns a row's permissions into the subjects run r's user may
// publish to.
func expandRow(row []string, r *permRun) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, p := range row {
		p = strings.ReplaceAll(p, "<dead-letter subject>", r.deadLetter())
		for _, st := range []string{r.stream, r.replica(), "DL" + r.stream} {
			q := strings.ReplaceAll(p, "<stream>", st)
			for _, c := range []string{"bill", "other"} {
				add(strings.ReplaceAll(q, "<consumer>", c))
			}
		}
	}
	return out
}

var permCellRE = regexp.MustCompile("`([^`]+)`")

// readPermsDoc reads the generated table: command -> its permissions.
func readPermsDoc(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "permissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i, j := strings.Index(page, permsBegin), strings.Index(page, permsEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/permissions.md lacks the markers of its generated table")
	}
	out := map[string][]string{}
	for _, line := range strings.Split(page[i:j], "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `jsctl ") {
			continue
		}
		cmd := strings.TrimSuffix(strings.TrimPrefix(cells[0], "| `jsctl "), "`")
		for _, m := range permCellRE.FindAllStringSubmatch(cells[1], -1) {
			out[cmd] = append(out[cmd], m[1])
		}
	}
	return out
}

// documentedRow returns the subjects docs/permissions.md lists for command,
// with <stream> and <consumer> filled in.
func documentedRow(t *testing.T, command, stream, consumer string) []string {
	t.Helper()
	row, ok := readPermsDoc(t)[command]
	if !ok || len(row) == 0 {
		t.Fatalf("docs/permissions.md has no row for jsctl %s", command)
	}
	out := make([]string, len(row))
	for i, s := range row {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "<stream>", stream), "<consumer>", consumer)
	}
	return out
}

// permsTable renders the measurement: per command, every permission its
// paths used, with the paths that used it when not all did.
func permsTable(measured map[string]map[string][]string, paths map[string][]string) string {
	var cmds []string
	for c := range measured {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	var b strings.Builder
	b.WriteString("| command | publishes to | paths measured |\n|---|---|---|\n")
	for _, c := range cmds {
		var subs []string
		for s := range measured[c] {
			subs = append(subs, s)
		}
		sort.Strings(subs)
		var cells []string
		for _, s := range subs {
			cell := "`" + s + "`"
			if by := measured[c][s]; len(by) < len(paths[c]) {
				cell += " (" + pathsNote(by, paths[c]) + ")"
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(&b, "| `jsctl %s` | %s | %s |\n", c, strings.Join(cells, "<br>"), strings.Join(shortPaths(paths[c], paths[c]), "; "))
	}
	return b.String()
}

// pathsNote says which of all the paths in by are: "with allow_direct"
// or "without allow_direct" when that is the whole difference, else their
// names.
func pathsNote(by, all []string) string {
	short := shortPaths(by, all)
	if len(short) == len(shortPaths(all, all)) {
		d, n := true, true
		for _, p := range short {
			d = d && strings.HasSuffix(p, " (allow_direct)")
			n = n && strings.HasSuffix(p, " (no allow_direct)")
		}
		if d {
			return "with allow_direct"
		}
		if n {
			return "without allow_direct"
		}
	}
	return strings.Join(short, "; ")
}

// shortPaths names the paths in by, a path measured with and without
// allow_direct once ("in place"), one measured only with it as "in place
// (allow_direct)", one only without as "in place (no allow_direct)".
func shortPaths(by, all []string) []string {
	has := map[string]bool{}
	for _, p := range by {
		has[p] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range all {
		base := strings.TrimSuffix(p, " (allow_direct)")
		if seen[base] {
			continue
		}
		seen[base] = true
		d, n := has[base+" (allow_direct)"], has[base]
		switch {
		case d && n:
			out = append(out, base)
		case d:
			out = append(out, base+" (allow_direct)")
		case n:
			out = append(out, base+" (no allow_direct)")
		}
	}
	return out
}

// lackRun is a path run by a user whose row lacks one subject.
type lackRun struct {
	run     *permRun
	subject string   // the permission taken away
	rest    []string // the row without it
}

// lackRuns picks, for each subject of each row, the first path the page
// says needs it, to run without it (on a stream of its own).
func lackRuns(t *testing.T, runs []*permRun) []*lackRun {
	t.Helper()
	var out []*lackRun
	for _, e := range readPermsNotes(t) {
		if strings.HasPrefix(e.subject, "$JS.API.CONSUMER.DELETE.KV_") {
			continue // a watch's courtesy delete, sent in the background (see runPath)
		}
		direct, name := true, ""
		switch {
		case e.note == "with allow_direct":
		case e.note == "without allow_direct":
			direct = false
		case e.note != "":
			name, _, _ = strings.Cut(e.note, "; ")
			if n, ok := strings.CutSuffix(name, " (no allow_direct)"); ok {
				name, direct = n, false
			}
			name = strings.TrimSuffix(name, " (allow_direct)")
		}
		var pick *permRun
		for _, r := range runs {
			if r.path.cmd == e.cmd && r.direct == direct && (name == "" || r.path.name == name) {
				pick = r
				break
			}
		}
		if pick == nil {
			t.Fatalf("docs/permissions.md: jsctl %s: no path %q measured (allow_direct %v) for %s", e.cmd, name, direct, e.subject)
		}
		var rest []string
		for _, s := range readPermsDoc(t)[e.cmd] {
			if s != e.subject {
				rest = append(rest, s)
			}
		}
		v := "N"
		if direct {
			v = "D"
		}
		n := len(out)
		out = append(out, &lackRun{
			run:     &permRun{path: pick.path, direct: direct, user: fmt.Sprintf("x%d", n), stream: fmt.Sprintf("X%d%s", n, v)},
			subject: e.subject, rest: rest,
		})
	}
	return out
}

// runLacking runs l: the server must refuse its user the subject taken
// away, and the command must say so, naming the refused subject and the
// operation ("may not ..."), whether it fails or goes on with a warning.
func (f *permFixture) runLacking(t *testing.T, l *lackRun) {
	t.Helper()
	r := l.run
	ctx := testserver.Context(t, 2*time.Minute)
	if err := f.makeStream(ctx, r.stream, r.direct); err != nil {
		t.Fatal(err)
	}
	if r.path.firstUse {
		f.noBuckets(t, ctx)
	} else {
		f.makeBuckets(t, ctx)
	}
	if r.path.setup != nil {
		r.path.setup(t, f, r)
	}
	logBefore := f.logSize(t)
	args := append([]string{"-s", f.srv.URL(), "--user", r.user, "--password", "pw", "--timeout", "5s", "--retry-for", "1s"}, r.expand(f, r.path.args)...)
	code, stdout, stderr, took := runJSCTL(t, args...)
	f.waitClosed(t, r.user)
	what := fmt.Sprintf("jsctl %s [%s, allow_direct %v] without %s", strings.Join(r.expand(f, r.path.args), " "), r.path.name, r.direct, l.subject)
	v := f.violations(t, logBefore, r.user)
	if len(v) == 0 {
		t.Errorf("%s: never refused (exit %d): the page says the path needs it", what, code)
		return
	}
	named := false
	for _, s := range v {
		subj := s[strings.Index(s, " to ")+4:]
		named = named || strings.Contains(stderr+stdout, subj)
	}
	if !named || !(strings.Contains(stderr+stdout, "may not") || strings.Contains(stderr+stdout, "permission denied")) {
		t.Errorf("%s: refused %s, exit %d, but the output does not name the refused operation and subject\nstdout: %s\nstderr: %s", what, strings.Join(v, ", "), code, stdout, stderr)
	}
	if strings.Contains(stderr, "could not find out") && strings.Contains(stderr, "nothing changed") {
		t.Errorf("%s: the error claims two outcomes: %s", what, stderr)
	}
	if took > 30*time.Second {
		t.Errorf("%s took %s", what, took)
	}
}

// permNote is one permission of a row and the paths the page says use it
// ("" for all).
type permNote struct{ cmd, subject, note string }

var permNoteRE = regexp.MustCompile("^`([^`]+)`(?: \\((.*)\\))?$")

func readPermsNotes(t *testing.T) []permNote {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "permissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i, j := strings.Index(page, permsBegin), strings.Index(page, permsEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/permissions.md lacks the markers of its generated table")
	}
	var out []permNote
	for _, line := range strings.Split(page[i:j], "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `jsctl ") {
			continue
		}
		cmd := strings.TrimSuffix(strings.TrimPrefix(cells[0], "| `jsctl "), "`")
		for _, cell := range strings.Split(cells[1], "<br>") {
			m := permNoteRE.FindStringSubmatch(cell)
			if m == nil {
				t.Fatalf("docs/permissions.md: jsctl %s: cannot read %q", cmd, cell)
			}
			out = append(out, permNote{cmd: cmd, subject: m[1], note: m[2]})
		}
	}
	return out
}

// cellDiff lists the permissions (with their notes) of the page's table
// and of the measured one that the other lacks, per command.
func cellDiff(page, measured string) string {
	cells := func(table string) map[string]bool {
		out := map[string]bool{}
		for _, line := range strings.Split(table, "\n") {
			c := strings.Split(line, " | ")
			if len(c) < 3 {
				continue
			}
			for _, cell := range strings.Split(c[1], "<br>") {
				out[c[0]+" | "+cell] = true
			}
		}
		return out
	}
	a, b := cells(page), cells(measured)
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, "page only:     "+k)
		}
	}
	for k := range b {
		if !a[k] {
			out = append(out, "measured only: "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
