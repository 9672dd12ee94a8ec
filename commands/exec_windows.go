//go:build windows

package commands

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// defaultShell runs --exec's command string on Windows: cmd.exe without
// its AutoRun commands (/d), the rest of the line taken as it is (/s /c;
// see cmdExeLine).
func defaultShell() []string { return []string{"cmd.exe", "/d", "/s", "/c"} }

// terminateText is what procTree.terminate sends, as warnings name it.
const terminateText = "CTRL_BREAK"

// setCommandLine gives cmd the command line to pass as it is.
func setCommandLine(cmd *exec.Cmd, line string) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CmdLine = line
}

// startTree starts cmd in a job object (every process it starts belongs to
// the job too, so the whole tree can be ended together) and in a console
// process group of its own (so a terminal's Ctrl-C reaches only jsctl, and
// jsctl can send the group CTRL_BREAK). The process starts suspended and
// runs only once it is in the job: nothing it starts can escape it.
func startTree(cmd *exec.Cmd) (procTree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create a job object for the command: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED
	if err := cmd.Start(); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	pid := uint32(cmd.Process.Pid)
	if err := assignAndResume(job, pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = windows.CloseHandle(job)
		return nil, err
	}
	return &jobTree{job: job, pid: pid}, nil
}

// assignAndResume puts the suspended process pid in job, then resumes its
// (only) thread.
func assignAndResume(job windows.Handle, pid uint32) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("open the command's process: %w", err)
	}
	err = windows.AssignProcessToJobObject(job, p)
	_ = windows.CloseHandle(p)
	if err != nil {
		return fmt.Errorf("put the command's process in its job object: %w", err)
	}
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("find the command's thread: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("open the command's thread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		_ = windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resume the command's thread: %w", err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("resume the command: no thread of process %d found", pid)
	}
	return nil
}

// jobTree is a handler's job object and the ID of its console process
// group (its first process's ID).
type jobTree struct {
	job windows.Handle
	pid uint32
}

// terminate sends CTRL_BREAK to the tree's console process group (the
// Windows counterpart of SIGTERM: programs may catch it and exit cleanly).
// Where it cannot be sent (jsctl has no console, as under a service
// manager), the tree is killed at once.
func (t *jobTree) terminate() {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, t.pid); err != nil {
		t.kill()
	}
}

// kill ends every process of the job.
func (t *jobTree) kill() { _ = windows.TerminateJobObject(t.job, 1) }

// release closes the job's handle; processes still in it keep running.
func (t *jobTree) release() { _ = windows.CloseHandle(t.job) }

// exitText says how a command that did not exit 0 ended.
func exitText(ee *exec.ExitError) string {
	return fmt.Sprintf("command exited with status %d", ee.ExitCode())
}
