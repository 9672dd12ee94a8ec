package commands

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// A line of plain words naming a program that starts itself runs without a
// shell; every line whose meaning needs sh (or a program exec cannot start)
// runs through it, and --shell always does.
func TestHandlerRunWithoutShell(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("cmd.exe runs every line on Windows")
	}
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := write("bill.sh", "#!/bin/sh\ncat >/dev/null\n", 0o755)
	noShebang := write("old.sh", "cat >/dev/null\n", 0o755)
	notExec := write("noexec.sh", "#!/bin/sh\n", 0o644)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		argv []string // nil: through sh -c
	}{
		{script, []string{script}},
		{script + " --mode=fast a,b x@y:1 50% +1", []string{script, "--mode=fast", "a,b", "x@y:1", "50%", "+1"}},
		{"  " + goBin + "\tversion ", []string{goBin, "version"}},
		{"go version", []string{"go", "version"}},
		{noShebang, nil},                 // sh runs it as a script; exec would not
		{notExec, nil},                   // sh reports it (126)
		{"no-such-program-jsctl x", nil}, // sh reports it (127)
		{script + " >out", nil},          // redirection
		{script + " | cat", nil},         // pipe
		{script + "; true", nil},         // list
		{script + " && true", nil},       // and
		{script + " &", nil},             // background
		{script + " '$x'", nil},          // quotes
		{script + ` "a b"`, nil},         // quotes
		{script + ` a\ b`, nil},          // escape
		{script + " $HOME", nil},         // expansion
		{script + " `id`", nil},          // command substitution
		{script + " *.sh", nil},          // glob
		{script + " ?", nil},             // glob
		{script + " [ab]", nil},          // glob
		{script + " ~", nil},             // tilde
		{script + " #c", nil},            // comment
		{script + " {a,b}", nil},         // brace expansion (bash)
		{script + " (x)", nil},           // subshell syntax
		{script + " !x", nil},            // history (bash)
		{"X=1 " + script, nil},           // assignment
		{"exit 3", nil},                  // builtin
		{"echo hi", nil},                 // builtin (its own echo)
		{"cd /tmp", nil},                 // builtin
		{"if", nil},                      // keyword
		{"", nil},                        // nothing
		{"é " + script, nil},             // not plain
	} {
		run, err := shellFlag{}.handlerRun(c.line)
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if !slices.Equal(run.argv, c.argv) {
			t.Errorf("%q: argv %q, want %q", c.line, run.argv, c.argv)
		}
		got := run.command().Args
		want := c.argv
		if want == nil {
			want = []string{"sh", "-c", c.line}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: runs %q, want %q", c.line, got, want)
		}
	}
	// --shell is the user's choice: always through it.
	run, err := shellFlag{Shell: "bash -c"}.handlerRun(script)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.command().Args; !slices.Equal(got, []string{"bash", "-c", script}) {
		t.Errorf("--shell: runs %q", got)
	}

	// Run for real: the same outcome as through the shell, and a program
	// gone by its turn fails as the shell's "not found" would.
	out := write("echoargs.sh", "#!/bin/sh\nprintf '%s|' \"$@\"; cat\n", 0o755)
	for _, line := range []string{out + " a --b=c", "sh -c '" + out + " a --b=c'"} {
		run, _ := shellFlag{}.handlerRun(line)
		var stdout bytes.Buffer
		if _, _, err := runProcess(context.Background(), run.command(), []byte("in"), &stdout, io.Discard); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if stdout.String() != "a|--b=c|in" {
			t.Errorf("%q: output %q", line, stdout.String())
		}
	}
	gone := write("gone.sh", "#!/bin/sh\n", 0o755)
	run, _ = shellFlag{}.handlerRun(gone)
	if run.argv == nil {
		t.Fatal("gone.sh: expected a direct run")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	_, _, err = runProcess(context.Background(), run.command(), nil, io.Discard, io.Discard)
	if got := run.exitErr(err); got == nil || !strings.Contains(got.Error(), "command not found: "+gone) {
		t.Errorf("a program gone by its turn: %v", got)
	}
}

// BenchmarkHandlerStart is what one --exec run costs jsctl to start and
// wait for, with and without the shell, against a bare fork+exec of the
// same program (the limit): go test ./commands -run '^$' -bench HandlerStart
func BenchmarkHandlerStart(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("no sh")
	}
	prog, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	direct, _ := shellFlag{}.handlerRun(prog)
	if direct.argv == nil {
		b.Fatalf("%s: expected a direct run", prog)
	}
	shell, _ := shellFlag{Shell: "sh -c"}.handlerRun(prog)
	b.Run("bare-fork-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(prog).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		run  handlerRun
	}{{"direct", direct}, {"sh-c", shell}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := runProcess(context.Background(), c.run.command(), []byte("x"), io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
