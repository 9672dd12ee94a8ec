package commands_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTimelineProgressPTY: a timeline with many buckets draws a progress
// bar on stderr at a terminal, clears it, and prints the chart; without a
// terminal (or with --json) stderr stays empty.
func TestTimelineProgressPTY(t *testing.T) {
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := js.Publish(ctx, []string{"orders.eu", "orders.us"}[i%2], []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	command := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"stream", "timeline", "ORDERS", "--buckets", "200", "--subject", "orders.eu"}, extra...)...)
		cmd.Env = append(os.Environ(), "NATS_URL="+s.ClientURL(), "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+t.TempDir())
		return cmd
	}

	p := startPTY(t, command())
	if code := p.exit(60 * time.Second); code != 0 {
		t.Fatalf("timeline on a pty: exit %d\n%s", code, p.output())
	}
	out := p.output()
	if !strings.Contains(out, "seeking bucket boundaries") || !strings.Contains(out, "Stream ORDERS, subjects \"orders.eu\": 150 messages") {
		t.Fatalf("at a terminal the timeline shows a progress bar, then the chart:\n%q", out)
	}

	for _, extra := range [][]string{nil, {"--json"}} {
		cmd := command(extra...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("timeline %v: %v\n%s", extra, err, stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("timeline %v without a terminal wrote to stderr: %q", extra, stderr.String())
		}
		if !strings.Contains(stdout.String(), fmt.Sprint(150)) {
			t.Errorf("timeline %v: %s", extra, stdout.String())
		}
	}
}
