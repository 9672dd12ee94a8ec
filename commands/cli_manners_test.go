package commands_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
)

// TestHelpWithoutACommand: a bare jsctl, jsctl help and jsctl help
// COMMAND... print help (exit 0), and jsctl help TOPIC prints the topic.
func TestHelpWithoutACommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "Usage: jsctl <command> [flags]"},
		{[]string{"help"}, "Usage: jsctl <command> [flags]"},
		{[]string{"help", "consumer", "reset"}, "Usage: jsctl consumer reset"},
		{[]string{"help", "times"}, `Unix time            "1795946400"`},
		{[]string{"help", "exit-codes"}, "7  permission denied by the server"},
		{[]string{"help", "connecting"}, "NATS_CONTEXT"},
		{[]string{"help", "permissions"}, "JSCTL_RESET_INTENTS"},
	} {
		var out, errb bytes.Buffer
		code := commands.Run(context.Background(), c.args, strings.NewReader(""), &out, &errb, false)
		if code != 0 || !strings.Contains(out.String(), c.want) || errb.Len() != 0 {
			t.Errorf("jsctl %v: exit %d, stdout %q, stderr %q; want exit 0 and %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// TestHelpPutsOwnFlagsFirst: a command's own flags come before the
// connection and output flags every command shares.
func TestHelpPutsOwnFlagsFirst(t *testing.T) {
	var out, errb bytes.Buffer
	commands.Run(context.Background(), []string{"consumer", "pause", "--help"}, strings.NewReader(""), &out, &errb, false)
	h := out.String()
	own, conn, output := strings.Index(h, "--until=TIME"), strings.Index(h, "Connection flags"), strings.Index(h, "Output flags")
	if own < 0 || conn < 0 || output < 0 || own > conn || own > output || strings.Index(h, "--server") < conn {
		t.Fatalf("consumer pause --help: own flags at %d, connection flags at %d, output flags at %d:\n%s", own, conn, output, h)
	}
}

// jsctlProc runs the test binary as jsctl (put in PATH by testscript.Main).
func jsctlProc(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "JSCTL_TZ=UTC", "XDG_CONFIG_HOME="+t.TempDir())
	return cmd
}

func procExitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// TestStdoutWriteErrors: text that cannot be written (a full disk) is a
// failure, in text as in --json; a pipe closed by its reader (| head) ends
// the command quietly.
func TestStdoutWriteErrors(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"version"}, {"--json", "version"}, {"help", "times"}, {"consumer", "reset", "--help"}} {
		cmd := jsctlProc(t, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		code := procExitCode(t, cmd.Run())
		if code != commands.ExitFailure || strings.Count(stderr.String(), "jsctl: error: ") != 1 || !strings.Contains(stderr.String(), "write standard output") || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("jsctl %v > /dev/full: exit %d, stderr %q; want exit 1 naming the write error once", args, code, stderr.String())
		}
	}

	// jsctl demo | head -3: the reader goes away after three lines.
	cmd := jsctlProc(t, "demo", "--messages", "4", "--gap", "1ms")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	br := bufio.NewReader(r)
	for i := 0; i < 3; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("line %d of the demo: %v", i+1, err)
		}
	}
	r.Close()
	if code := procExitCode(t, cmd.Wait()); code != 0 || stderr.Len() != 0 {
		t.Fatalf("jsctl demo | head -3: exit %d, stderr %q; want exit 0 and nothing on stderr", code, stderr.String())
	}
}

// TestDemoInterrupted: Ctrl-C during the demo says it was interrupted (exit
// 6), not "context canceled".
func TestDemoInterrupted(t *testing.T) {
	cmd := jsctlProc(t, "demo", "--messages", "50", "--gap", "200ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	if _, err := br.ReadString('\n'); err != nil { // the demo is under way
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = br.WriteTo(new(bytes.Buffer)) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := procExitCode(t, err); code != commands.ExitCancelled || strings.TrimSpace(stderr.String()) != "jsctl: error: demo: interrupted" {
			t.Fatalf("demo after SIGINT: exit %d, stderr %q; want exit 6 and \"jsctl: error: demo: interrupted\"", code, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the demo did not stop within 2 minutes of SIGINT")
	}
}
