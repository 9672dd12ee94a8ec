package commands_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// These tests run the committed scripts (completions/) in the real shells,
// with the test binary on PATH as jsctl (testscript.Main puts it there).
// A missing shell skips the test, except in CI (CI=true), where it fails:
// CI installs bash, zsh and fish.

func requireShell(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI must install bash, zsh and fish)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

func scriptPath(t *testing.T, shell string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "completions", "jsctl."+shell))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runShell runs a shell with args and a clean, isolated environment plus
// env, bounded in time, and returns its standard output. The bound is
// generous: one shell runs several -race jsctl processes, which took over
// 30s on a loaded 2-core machine.
func runShell(t *testing.T, shell string, env []string, args ...string) string {
	t.Helper()
	return runShellIn(t, t.TempDir(), shell, env, args...)
}

// runShellIn is runShell with home as $HOME and working directory.
func runShellIn(t *testing.T, home, shell string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, requireShell(t, shell), args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".data"), "TERM=dumb", "JSCTL_TZ=UTC", "JSCTL_COMPLETE_TIMEOUT=20s",
		"GORACE=" + os.Getenv("GORACE"),
		"NATS_URL=nats://127.0.0.1:1",
	}, env...)
	cmd.Dir = home
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", shell, args, err, out, stderr)
	}
	return string(out)
}

func TestCompletionScriptsLoad(t *testing.T) {
	t.Run("bash", func(t *testing.T) {
		out := runShell(t, "bash", nil, "-c", `source "$1" && complete -p jsctl`, "bash", scriptPath(t, "bash"))
		if strings.TrimSpace(out) != "complete -F _jsctl jsctl" {
			t.Errorf("complete -p jsctl = %q", out)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		out := runShell(t, "zsh", nil, "-f", "-c",
			`autoload -U compinit && compinit -u -D && source "$1" && print -r -- $_comps[jsctl]`, "zsh", scriptPath(t, "zsh"))
		if strings.TrimSpace(out) != "_jsctl" {
			t.Errorf("sourced: $_comps[jsctl] = %q", out)
		}
		// Installed in $fpath as _jsctl, compinit finds it by its #compdef line.
		dir := t.TempDir()
		b, err := os.ReadFile(scriptPath(t, "zsh"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_jsctl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = runShell(t, "zsh", nil, "-f", "-c",
			`fpath=("$1" $fpath) && autoload -U compinit && compinit -u -D && print -r -- $_comps[jsctl]`, "zsh", dir)
		if strings.TrimSpace(out) != "_jsctl" {
			t.Errorf("fpath: $_comps[jsctl] = %q", out)
		}
	})
	t.Run("fish", func(t *testing.T) {
		out := runShell(t, "fish", nil, "--no-config", "-c", `source $argv[1]; and complete -c jsctl`, scriptPath(t, "fish"))
		if !strings.Contains(out, "__jsctl_complete") {
			t.Errorf("complete -c jsctl = %q", out)
		}
	})
}

// completionServer starts a server with streams ORDERS and PAYMENTS and
// consumers on them, and returns its URL.
func completionServer(t *testing.T) string {
	t.Helper()
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for stream, consumers := range map[string][]string{"ORDERS": {"billing", "audit"}, "PAYMENTS": {"settle"}} {
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range consumers {
			if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s.ClientURL()
}

// TestCompletionBash calls the completion function as bash does at <Tab>:
// COMP_WORDS split at COMP_WORDBREAKS, COMP_CWORD, COMP_LINE, COMP_POINT,
// and $1 $2 $3 = command, word to complete, previous word; then reads
// COMPREPLY.
func TestCompletionBash(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	requireShell(t, "bash")
	url := completionServer(t)
	const driver = `source "$1" || exit 1
shift
# complete LINE: split LINE as bash does and call _jsctl like <Tab> would.
complete_line() {
    COMP_LINE=$1 COMP_POINT=${#1}
    local line=$1 cur=""
    COMP_WORDS=()
    # words: split on blanks, then at '=' (COMP_WORDBREAKS) outside quotes.
    local w
    for w in $line; do
        if [[ $w == --*=* && $w != *\"* ]]; then
            COMP_WORDS+=("${w%%=*}" "=")
            [[ -n ${w#*=} ]] && COMP_WORDS+=("${w#*=}")
        else
            COMP_WORDS+=("$w")
        fi
    done
    [[ $line == *" " || ${COMP_WORDS[${#COMP_WORDS[@]}-1]} == "=" ]] && COMP_WORDS+=("")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    cur=${COMP_WORDS[COMP_CWORD]}
    cur=${cur#\"}
    COMPREPLY=()
    _jsctl jsctl "$cur" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s|' "${COMPREPLY[@]}"
    printf '\n'
}
for l in "$@"; do complete_line "$l"; done
`
	tests := []struct{ line, want string }{
		{"jsctl se", "seek|serve|"},
		{"jsctl seek ", "ORDERS|PAYMENTS|"},
		{"jsctl seek P", "PAYMENTS|"},
		{"jsctl seek ORDERS --mode=n", "nearest|"},
		{"jsctl seek ORDERS --mode ", "after|before|nearest|"},
		{`jsctl seek ORDERS "2h`, "2h ago|"},
		{"jsctl seek ORDERS 2h", `2h\ ago|`},
		{"jsctl completion ", "bash|zsh|fish|"},
	}
	args := []string{"-c", driver, "bash", scriptPath(t, "bash")}
	for _, tt := range tests {
		args = append(args, tt.line)
	}
	out := runShell(t, "bash", []string{"NATS_URL=" + url}, args...)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(tests) {
		t.Fatalf("got %d results for %d lines:\n%s", len(got), len(tests), out)
	}
	for i, tt := range tests {
		if got[i] != tt.want {
			t.Errorf("bash <Tab> after %q: COMPREPLY = %q, want %q", tt.line, got[i], tt.want)
		}
	}
}

// TestCompletionFish asks fish itself (complete -C, what <Tab> runs).
func TestCompletionFish(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	requireShell(t, "fish")
	url := completionServer(t)
	lines := []struct{ line, want string }{
		{"jsctl se", "seek\tFind the stream sequence for a time.|serve\tRun an embedded JetStream server in the foreground.|"},
		{"jsctl seek ", "ORDERS\tstream|PAYMENTS\tstream|"},
		{"jsctl seek --mode=b", "--mode=before|"},
		{`jsctl seek ORDERS "2h`, "2h ago\ttwo hours ago|"},
		{"jsctl completion z", "zsh|"},
	}
	script := `source $argv[1]; or exit 1
for l in $argv[2..-1]
    string join '|' -- (complete -C"$l") ''
end`
	args := []string{"--no-config", "-c", script, scriptPath(t, "fish")}
	for _, l := range lines {
		args = append(args, l.line)
	}
	out := runShell(t, "fish", []string{"NATS_URL=" + url}, args...)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) {
		t.Fatalf("got %d results for %d lines:\n%s", len(got), len(lines), out)
	}
	for i, l := range lines {
		if got[i] != l.want {
			t.Errorf("fish complete -C %q = %q, want %q", l.line, got[i], l.want)
		}
	}
}

// TestCompletionZsh runs the zsh function with the completion system's
// variables set as at <Tab> (words, CURRENT, PREFIX) and _describe/_files
// replaced by stand-ins that print what they were given.
func TestCompletionZsh(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	requireShell(t, "zsh")
	url := completionServer(t)
	script := `compdef() { :; }
_describe() { local n=${@[-1]}; print -r -- "${(j:|:)${(@P)n}}"; }
_files() { print -r -- "_files $*"; }
source "$1" || exit 1
shift
for l in "$@"; do
    words=("${(@z)l}")
    [[ $l == *" " ]] && words+=("")
    CURRENT=${#words}
    PREFIX=${words[-1]}
    _jsctl || print -r -- "(none)"
done`
	lines := []struct{ line, want string }{
		{"jsctl se", "seek:Find the stream sequence for a time.|serve:Run an embedded JetStream server in the foreground."},
		{"jsctl seek ", "ORDERS:stream|PAYMENTS:stream"},
		{"jsctl seek ORDERS --mode ", "after|before|nearest"},
		{"jsctl seek ORDERS n", "now:the current time"},
		{"jsctl --embedded ", "_files -/"},
		{"jsctl nosuch ", "(none)"},
	}
	args := []string{"-f", "-c", script, "zsh", scriptPath(t, "zsh")}
	for _, l := range lines {
		args = append(args, l.line)
	}
	out := runShell(t, "zsh", []string{"NATS_URL=" + url}, args...)
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) {
		t.Fatalf("got %d results for %d lines:\n%s", len(got), len(lines), out)
	}
	for i, l := range lines {
		if got[i] != l.want {
			t.Errorf("zsh _jsctl after %q = %q, want %q", l.line, got[i], l.want)
		}
	}
}

// TestCompletionZshDocSteps follows docs/completion.md's zsh steps
// literally on a fresh account (an empty home and ZDOTDIR: no .zshrc, no
// compinit), then starts an interactive zsh, which reads only what the
// steps wrote, and checks that jsctl completes there.
func TestCompletionZshDocSteps(t *testing.T) {
	requireShell(t, "zsh")
	b, err := os.ReadFile(filepath.Join("..", "docs", "completion.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "# zsh")
	end := strings.Index(doc, "# fish")
	if start < 0 || end < start {
		t.Fatal("docs/completion.md has no zsh steps between \"# zsh\" and \"# fish\"")
	}
	var steps []string
	for _, l := range strings.Split(doc[start:end], "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			steps = append(steps, l)
		}
	}
	if len(steps) < 2 {
		t.Fatalf("zsh steps: %q", steps)
	}
	home := t.TempDir()
	env := []string{"HOME=" + home, "ZDOTDIR=" + home}
	// The steps, run by zsh as a user would type them (-f: no startup files).
	runShellIn(t, home, "zsh", env, "-f", "-c", strings.Join(steps, "\n"))
	// A new interactive shell: it reads $ZDOTDIR/.zshrc, nothing else.
	out := runShellIn(t, home, "zsh", env, "-i", "-c", `print -r -- "comps=$_comps[jsctl]"; whence -w _jsctl`)
	if !strings.Contains(out, "comps=_jsctl") || !strings.Contains(out, "_jsctl: function") {
		t.Fatalf("after the documented steps, a new zsh does not complete jsctl:\n%s\nsteps:\n%s", out, strings.Join(steps, "\n"))
	}
}
