//go:build unix

package commands

import (
	"fmt"
	"os/exec"
	"syscall"
)

// defaultShell runs --exec's command string on Unix.
func defaultShell() []string { return []string{"sh", "-c"} }

// terminateText is what procTree.terminate sends, as warnings name it.
const terminateText = "SIGTERM"

// setCommandLine is for Windows' cmd.exe; on Unix arguments are passed as
// they are.
func setCommandLine(*exec.Cmd, string) {}

// startTree starts cmd in a process group of its own (its process group
// ID is its PID), so that a terminal's Ctrl-C reaches only jsctl and jsctl
// can stop every process of the group together.
func startTree(cmd *exec.Cmd) (procTree, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return processGroup(cmd.Process.Pid), nil
}

// processGroup is a handler's process group, by its ID.
type processGroup int

func (g processGroup) terminate() { _ = syscall.Kill(-int(g), syscall.SIGTERM) }
func (g processGroup) kill()      { _ = syscall.Kill(-int(g), syscall.SIGKILL) }
func (processGroup) release()     {}

// exitText says how a command that did not exit 0 ended.
func exitText(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("command killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("command exited with status %d", ee.ExitCode())
}
