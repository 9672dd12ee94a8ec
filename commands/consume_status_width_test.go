//go:build linux

package commands_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jsctl/jsctl/internal/testserver"
)

// At an 80-column terminal consume's status line fits in one row (fewer
// fields), so that redrawing it never scrolls.
func TestConsumeStatusLine80Columns(t *testing.T) {
	f := newResetFixture(t) // ORDERS with 5 messages, consumer billing
	cmd := exec.Command(f.bin, "consume", "ORDERS", "billing", "--exec", "sleep 0.3", "--max", "3")
	cmd.Env = append(os.Environ(), "NATS_URL="+f.url, "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+t.TempDir())
	p := startVT(t, cmd, 80, 24)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("consume exited %d:\n%s", code, p.output())
	}
	// The summary is the last thing written; it may arrive after the exit.
	testserver.WaitFor(t, 30*time.Second, "the summary", func() bool { return strings.Contains(p.output(), "floor 3)") })
	escapes := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	spinner := regexp.MustCompile(`^\S processed \d+, `)
	drawn := 0
	for _, seg := range strings.FieldsFunc(escapes.ReplaceAllString(p.output(), ""), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if !strings.Contains(seg, "msg/s") {
			continue
		}
		drawn++
		if n := utf8.RuneCountInString(seg); n >= 80 {
			t.Errorf("status line of %d columns at an 80-column terminal: %q", n, seg)
		}
		if !spinner.MatchString(seg) {
			t.Errorf("status line does not start with the counts: %q", seg)
		}
	}
	if drawn == 0 {
		t.Fatalf("no status line drawn:\n%q", p.output())
	}
}
