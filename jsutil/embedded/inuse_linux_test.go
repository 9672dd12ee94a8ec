//go:build linux

package embedded_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
)

// TestStartRefusesOpenStore: a process (any name) that holds a file of the
// store open, as nats-server holds each stream's last message block, makes
// Start refuse the store before writing anything to it.
func TestStartRefusesOpenStore(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "jetstream", "1.blk")
	if err := os.MkdirAll(filepath.Dir(held), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `exec 3>>"$0"; read line`, held)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	fd := fmt.Sprintf("/proc/%d/fd/3", cmd.Process.Pid)
	testserver.WaitFor(t, 10*time.Second, "the holder to open the file", func() bool {
		target, err := os.Readlink(fd)
		return err == nil && target == held
	})
	_, err = embedded.Start(embedded.Options{StoreDir: dir})
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d: has %s open)", cmd.Process.Pid, held)) {
		t.Fatalf("Start over a store another process has open: %v, want a conflict naming the process and the file", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "jsctl.lock")); !os.IsNotExist(err) {
		t.Errorf("the refused store was written to: %v", err)
	}
}
