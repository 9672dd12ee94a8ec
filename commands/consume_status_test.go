package commands_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// consume at a terminal shows a status line on stderr (counts, rate,
// pending, lag) and clears it for the command's own output; with stderr not
// a terminal, or --json, or --progress=false there is none.
func TestConsumeStatusLinePTY(t *testing.T) {
	f := newResetFixture(t) // ORDERS with 5 messages, consumer billing
	cmd := exec.Command(f.bin, "consume", "ORDERS", "billing", "--exec", "sleep 0.4; echo handled $JSCTL_SEQ >&2", "--max", "5")
	cmd.Env = append(os.Environ(), "NATS_URL="+f.url, "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+t.TempDir())
	p := startPTY(t, cmd)
	// A status line while messages are being handled (which counts it
	// shows depends on when it is redrawn).
	p.waitForMatch(`processed [1-4], duplicates 0, failed 0, busy 0 ·`)
	p.waitFor("msg/s")
	p.waitFor("pending ")
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("consume exited %d:\n%s", code, p.output())
	}
	// The summary is the last thing written; the terminal may show it
	// after the exit.
	p.waitFor("processed 5, duplicates skipped 0, failed 0, busy 0 (scope ORDERS.billing, floor 5)")
	out := p.output()
	for seq := 1; seq <= 5; seq++ {
		// The command's output arrives on a line of its own: the status
		// line was cleared before it.
		if !strings.Contains(out, "\nhandled "+string(rune('0'+seq))+"\r\n") && !strings.Contains(out, "\rhandled "+string(rune('0'+seq))+"\r\n") {
			t.Errorf("handler output for %d is not on a line of its own:\n%q", seq, out)
		}
	}

	// Not a terminal: no status line at all.
	for _, extra := range [][]string{nil, {"--progress=false"}} {
		args := append([]string{"consume", "ORDERS", "billing", "--exec", "true", "--idle", "500ms"}, extra...)
		cmd := exec.Command(f.bin, args...)
		cmd.Env = append(os.Environ(), "NATS_URL="+f.url, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), "msg/s") {
			t.Errorf("status line without a terminal (%v): %q", extra, stderr.String())
		}
	}
	cmd = exec.Command(f.bin, "consume", "ORDERS", "billing", "--exec", "true", "--idle", "500ms", "--progress=false")
	cmd.Env = append(os.Environ(), "NATS_URL="+f.url, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
	p = startPTY(t, cmd)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("consume --progress=false exited %d", code)
	}
	p.waitFor("(scope ORDERS.billing, floor 5)")
	if strings.Contains(p.output(), "msg/s") {
		t.Errorf("--progress=false still drew a status line: %q", p.output())
	}
}
