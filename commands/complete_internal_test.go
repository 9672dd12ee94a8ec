package commands

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// fakeCLI is a model shaped like jsctl's, so the completion engine is
// tested independently of the commands other files add.
type fakeCLI struct {
	Globals

	Seek struct {
		Stream  string `arg:""`
		Time    string `arg:"" optional:""`
		Mode    string `enum:"after,before,nearest" default:"after" help:"Mode."`
		Subject string `placeholder:"FILTER"`
	} `cmd:"" help:"Find a sequence."`
	Consumer struct {
		Reset struct {
			Stream    string   `arg:""`
			Consumers []string `arg:"" optional:"" name:"consumer"`
			ToTime    string   `name:"to-time"`
			FromFile  string   `name:"from-file" type:"path"`
			Execute   bool
			Color     bool   `negatable:""`
			Bucket    string `name:"bucket" default:"OTHERB"`
			Scope     string `name:"scope" predictor:"scope"`
		} `cmd:"" help:"Reset."`
		Info struct {
			Stream   string `arg:""`
			Consumer string `arg:""`
		} `cmd:"" help:"Info."`
	} `cmd:"" help:"Consumers."`
	Acks struct {
		Ls struct {
			Scope  string
			Bucket string
		} `cmd:"" help:"List."`
	} `cmd:""`
	Tagged struct {
		Src string `arg:"" predictor:"stream"`
		Dst string `arg:"" predictor:"consumer"`
	} `cmd:""`
	Hidden struct{} `cmd:"" hidden:""`
}

func fakeCompleter(t *testing.T) (*completer, *Env) {
	t.Helper()
	cli := &fakeCLI{}
	env := &Env{Globals: &cli.Globals, Now: func() time.Time { return time.Date(2026, 11, 29, 18, 30, 0, 0, time.UTC) }}
	k, err := kong.New(cli, kong.Name("jsctl"), kong.Vars{"default_url": "x"})
	if err != nil {
		t.Fatal(err)
	}
	c := &completer{app: k.Model, env: env, ctx: context.Background()}
	t.Cleanup(c.close)
	return c, env
}

func values(cands []candidate) []string {
	out := []string{}
	for _, c := range cands {
		out = append(out, c.Value)
	}
	return out
}

func TestCompleteModelNoServer(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	tests := []struct {
		line string // words; the last is the word under the cursor
		want []string
		dir  string
	}{
		{"", []string{"acks", "consumer", "seek", "tagged"}, directiveValues},
		{"c", []string{"consumer"}, directiveValues},
		{"consumer ", []string{"info", "reset"}, directiveValues},
		{"nosuch ", nil, directiveValues},
		{"consumer nosuch --", nil, directiveValues},
		{"--tz UTC consumer i", []string{"info"}, directiveValues},
		{"-j consumer i", []string{"info"}, directiveValues},
		{"seek --m", []string{"--mode"}, directiveValues},
		{"seek --mode ", []string{"after", "before", "nearest"}, directiveValues},
		{"seek --mode=n", []string{"--mode=nearest"}, directiveValues},
		{"seek --mode b", []string{"before"}, directiveValues},
		{"seek S -1", []string{"-15m", "-1h"}, directiveValues},
		{"seek S 2", []string{"2h ago", "2026-11-29", "2026-11-29 18:00", "2026-11-28"}, directiveValues},
		{"consumer reset S --to-time=n", []string{"--to-time=now"}, directiveValues},
		{"consumer reset S --from-file ", nil, directiveFiles},
		{"consumer reset S --from-file=", nil, directiveFiles},
		{"consumer reset S --no-c", []string{"--no-color"}, directiveValues},
		{"consumer reset S --execute --e", []string{"--embedded"}, directiveValues},
		{"seek S -1h ", []string{"--audit", "--context", "--creds", "--embedded", "--help", "--js-domain", "--json", "--log-format", "--mode", "--nkey",
			"--password", "--reason", "--require-reason", "--retry-for", "--server", "--subject", "--sync", "--timeout", "--tlsca", "--tlscert", "--tlskey", "--token", "--tz", "--user", "--wide"}, directiveValues},
		{"--embedded ", nil, directiveDirs},
		{"--tz ", []string{"UTC", "Local"}, directiveValues},
		{"-- --", nil, directiveValues},
		{"seek S now ", []string{"--audit", "--context", "--creds", "--embedded", "--help", "--js-domain", "--json", "--log-format", "--mode", "--nkey",
			"--password", "--reason", "--require-reason", "--retry-for", "--server", "--subject", "--sync", "--timeout", "--tlsca", "--tlscert", "--tlskey", "--token", "--tz", "--user", "--wide"}, directiveValues},
		{"h", nil, directiveValues},
	}
	for _, tt := range tests {
		c, _ := fakeCompleter(t)
		words := strings.Split(tt.line, " ")
		got, dir := c.complete(words[:len(words)-1], words[len(words)-1])
		if !reflect.DeepEqual(values(got), append([]string{}, tt.want...)) || dir != tt.dir {
			t.Errorf("complete %q = %q %s, want %q %s", tt.line, values(got), dir, tt.want, tt.dir)
		}
		if c.tried {
			t.Errorf("complete %q contacted a server", tt.line)
		}
	}
}

func TestPredictorOf(t *testing.T) {
	c, _ := fakeCompleter(t)
	want := map[string]string{
		"seek/stream": predictStream, "seek/time": predictTime, "seek/mode": predictEnum, "seek/subject": predictNone,
		"consumer reset/consumer": predictConsumer, "consumer reset/to-time": predictTime, "consumer reset/from-file": predictFile,
		"consumer reset/execute": predictNone, "acks ls/scope": predictScope, "tagged/src": predictStream, "tagged/dst": predictConsumer,
	}
	got := map[string]string{}
	for _, leaf := range c.app.Leaves(false) {
		for _, v := range leaf.Positional {
			got[leaf.Path()+"/"+v.Name] = predictorOf(v)
		}
		for _, f := range leaf.Flags {
			got[leaf.Path()+"/"+f.Name] = predictorOf(f.Value)
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("predictorOf(%s) = %q, want %q", k, got[k], w)
		}
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		line, raw string
		words     []string
	}{
		{"jsctl ", "", []string{"jsctl", ""}},
		{"jsctl seek", "seek", []string{"jsctl", "seek"}},
		{`jsctl a\ b "c d" 'e f`, `'e f`, []string{"jsctl", "a b", "c d", "e f"}},
		{`jsctl --since="2h`, `--since="2h`, []string{"jsctl", "--since=2h"}},
		{`jsctl "a\"b"`, `"a\"b"`, []string{"jsctl", `a"b`}},
	}
	for _, tt := range tests {
		words, raw := shellWords(tt.line)
		if !reflect.DeepEqual(words, tt.words) || raw != tt.raw {
			t.Errorf("shellWords(%q) = %q, %q; want %q, %q", tt.line, words, raw, tt.words, tt.raw)
		}
	}
}

// TestCompleteBashReplacement checks the text bash inserts in place of its
// $2, which starts after COMP_WORDBREAKS characters and open quotes.
func TestCompleteBashReplacement(t *testing.T) {
	tests := []struct {
		line, text string
		want       []string
	}{
		{"jsctl seek --mode=n", "n", []string{"nearest"}},
		{"jsctl seek --mode=", "=", []string{"=after", "=before", "=nearest"}}, // bash's own word is "="
		{"jsctl seek S 2h", "2h", []string{`2h\ ago`}},
		{`jsctl seek S "2h`, "2h", []string{"2h ago"}},
		{`jsctl seek S '2h`, "2h", []string{"2h ago"}},
		{`jsctl seek S 2026-11-29\ 18:0`, "0", []string{"00"}},
		{`jsctl consumer reset S --to-time="2`, "2", []string{"2h ago", "2026-11-29", "2026-11-29 18:00", "2026-11-28"}},
	}
	for _, tt := range tests {
		c, env := fakeCompleter(t)
		var out bytes.Buffer
		env.Stdout = &out
		if err := completeBash(env, c, tt.line, tt.text, true); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if lines[len(lines)-1] != directiveValues {
			t.Errorf("%q: no directive in %q", tt.line, out.String())
		}
		if got := lines[:len(lines)-1]; !reflect.DeepEqual(got, append([]string{}, tt.want...)) {
			t.Errorf("bash %q (text %q) = %q, want %q", tt.line, tt.text, got, tt.want)
		}
	}
}

func TestCompleteModelServer(t *testing.T) {
	s := testserver.Start(t)
	nc := testserver.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"ORDERS", "OTHER"} {
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"billing", "audit"} {
			if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name[:1] + d}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, b := range []string{acks.DefaultBucket, "OTHERB"} {
		st, err := acks.Open(ctx, js, acks.WithBucket(b))
		if err != nil {
			t.Fatal(err)
		}
		// Scopes are read from the keys only: a floor key makes one known.
		for _, sc := range []string{acks.DefaultScope("ORDERS", "billing"), acks.ScopeName("shared.v" + b[:1])} {
			if _, err := st.KV().Put(ctx, "f."+sc, []byte("1")); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		line string
		want []string
	}{
		{"seek ", []string{"ORDERS", "OTHER"}},
		{"acks ls --scope ", []string{"ORDERS.billing", "shared.vJ"}},
		{"acks ls --bucket OTHERB --scope s", []string{"shared.vO"}},
		{"consumer reset ORDERS --scope ", []string{"ORDERS.billing", "shared.vO"}},
		{"consumer reset ORDERS --bucket JSCTL_ACKS --scope=s", []string{"--scope=shared.vJ"}},
		{"seek OR", []string{"ORDERS"}},
		{"seek KV_", []string{"KV_JSCTL_ACKS", "KV_OTHERB"}},
		{"consumer info ORDERS ", []string{"Oaudit", "Obilling"}},
		{"consumer info OTHER ", []string{"Oaudit", "Obilling"}},
		{"consumer reset ORDERS Obilling ", []string{"Oaudit"}},
		{"consumer info NOPE ", []string{}},
		{"tagged OTHER O", []string{"Oaudit", "Obilling"}},
	}
	for _, tt := range tests {
		c, env := fakeCompleter(t)
		env.Globals.Server = s.ClientURL()
		words := strings.Split(tt.line, " ")
		got, _ := c.complete(words[:len(words)-1], words[len(words)-1])
		if !reflect.DeepEqual(values(got), tt.want) {
			t.Errorf("complete %q = %q, want %q", tt.line, values(got), tt.want)
		}
	}
	// The server on the line wins over the environment's.
	c, _ := fakeCompleter(t)
	got, _ := c.complete([]string{"--server", s.ClientURL(), "seek"}, "")
	if !reflect.DeepEqual(values(got), []string{"ORDERS", "OTHER"}) {
		t.Errorf("--server on the line: got %q", values(got))
	}
}

// TestCompleteSilentServer checks the budget: a server that accepts the
// connection and never answers costs at most the budget, and offers nothing.
func TestCompleteSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c, env := fakeCompleter(t)
	env.Globals.Server = "nats://" + ln.Addr().String()
	env.Globals.Timeout = time.Minute
	start := time.Now()
	got, _ := c.complete([]string{"seek"}, "")
	if el := time.Since(start); el > completeServerBudget+time.Second {
		t.Errorf("completion took %v with a silent server (budget %v)", el, completeServerBudget)
	}
	if len(got) != 0 {
		t.Errorf("got %q from a silent server", values(got))
	}
	// JSCTL_COMPLETE_TIMEOUT's budget bounds it the same way.
	c, env = fakeCompleter(t)
	c.budget = 300 * time.Millisecond
	env.Globals.Server = "nats://" + ln.Addr().String()
	env.Globals.Timeout = time.Minute
	start = time.Now()
	if got, _ := c.complete([]string{"seek"}, ""); len(got) != 0 {
		t.Errorf("got %q from a silent server", values(got))
	}
	if el := time.Since(start); el < c.budget || el > c.budget+time.Second {
		t.Errorf("completion took %v with a silent server, budget %v", el, c.budget)
	}
}

// TestCompleteBudget reads JSCTL_COMPLETE_TIMEOUT: a duration above zero,
// else the default.
func TestCompleteBudget(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": completeServerBudget, "3s": 3 * time.Second, " 250ms ": 250 * time.Millisecond,
		"0": completeServerBudget, "-1s": completeServerBudget, "soon": completeServerBudget, "5": completeServerBudget,
	} {
		if got := completeBudget(v); got != want {
			t.Errorf("completeBudget(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCompleteContexts(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	dir := filepath.Join(cfg, "nats", "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"prod", "dev"} {
		if err := os.WriteFile(filepath.Join(dir, n+".json"), []byte(`{"url":"nats://x"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := fakeCompleter(t)
	got, _ := c.complete([]string{"--context"}, "")
	if !reflect.DeepEqual(values(got), []string{"dev", "prod"}) {
		t.Errorf("--context: got %q", values(got))
	}
}
