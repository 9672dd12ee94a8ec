package commands

import (
	"os/exec"
	"slices"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
)

// handlerRun is what --exec runs, once per message or per batch: the
// user's command string through a shell (sh -c on Unix, cmd /d /s /c on
// Windows, or --shell), or, when argv is set, a program and its arguments
// without a shell. Message content never goes into either.
type handlerRun struct {
	// shell is the shell program and the options that come before the
	// command string; line is the command string.
	shell []string
	line  string
	// argv, when set, is run as it is (no shell).
	argv []string
}

// shellFlag is --shell, shared by the commands that run --exec.
type shellFlag struct {
	Shell string `name:"shell" env:"JSCTL_SHELL" placeholder:"PROGRAM [OPTION...]" help:"Shell that runs CMD, with the options that come before it (split at spaces; CMD is passed as one more argument). Default: sh -c; on Windows cmd /d /s /c."`
}

// handlerRun is how CMD runs: through --shell; or, without it, as a
// program and its arguments when the line is plain words (directArgv),
// else through the platform's shell.
func (f shellFlag) handlerRun(line string) (handlerRun, error) {
	shell := defaultShell()
	if f.Shell == "" {
		if argv := directArgv(line); argv != nil {
			return handlerRun{shell: shell, line: line, argv: argv}, nil
		}
	} else {
		shell = strings.Fields(f.Shell)
		if len(shell) == 0 {
			return handlerRun{}, jsutil.Errorf(jsutil.ErrBadInput, "--shell names no program: give one, such as --shell 'bash -c' or --shell 'pwsh -NoProfile -Command'")
		}
	}
	return handlerRun{shell: shell, line: line}, nil
}

// command prepares one run (not started).
func (r handlerRun) command() *exec.Cmd {
	if len(r.argv) > 0 {
		return exec.Command(r.argv[0], r.argv[1:]...)
	}
	cmd := exec.Command(r.shell[0], append(slices.Clone(r.shell[1:]), r.line)...)
	if isCmdExe(r.shell[0]) {
		setCommandLine(cmd, cmdExeLine(r.shell, r.line)) // Windows only: cmd.exe reads its own command line
	}
	return cmd
}

// isCmdExe reports whether program is Windows' cmd.exe, whose command line
// is not split by the rules that Go's quoting of arguments follows.
func isCmdExe(program string) bool {
	base := program[strings.LastIndexAny(program, `\/`)+1:]
	return strings.EqualFold(base, "cmd") || strings.EqualFold(base, "cmd.exe")
}

// cmdExeLine is the command line that makes cmd.exe run line exactly as
// written: after /s /c, cmd.exe removes the first and the last quote of
// the rest of its command line and runs what is between as it is, quotes,
// carets and percent signs included (the way a .bat line reads). Its other
// options pass as written; a program path with spaces is quoted.
func cmdExeLine(shell []string, line string) string {
	var b strings.Builder
	if strings.ContainsAny(shell[0], " \t") {
		b.WriteString(`"` + shell[0] + `"`)
	} else {
		b.WriteString(shell[0])
	}
	for _, o := range shell[1:] {
		b.WriteString(" " + o)
	}
	b.WriteString(` "` + line + `"`)
	return b.String()
}
