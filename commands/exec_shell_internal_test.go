package commands

import (
	"runtime"
	"slices"
	"testing"
)

// cmd.exe gets the command string exactly as written between the quotes
// it strips after /s /c; other shells get it as one more argument.
func TestHandlerRunCommandLines(t *testing.T) {
	for _, c := range []struct {
		shell []string
		line  string
		want  string
	}{
		{[]string{"cmd.exe", "/d", "/s", "/c"}, `echo "a b" & type %TEMP%\x ^| more`, `cmd.exe /d /s /c "echo "a b" & type %TEMP%\x ^| more"`},
		{[]string{`C:\Windows\System32\cmd.exe`, "/s", "/c"}, `dir`, `C:\Windows\System32\cmd.exe /s /c "dir"`},
		{[]string{`C:\Program Files\My Shell\cmd.exe`, "/s", "/c"}, `x`, `"C:\Program Files\My Shell\cmd.exe" /s /c "x"`},
	} {
		if got := cmdExeLine(c.shell, c.line); got != c.want {
			t.Errorf("cmdExeLine(%q, %q) = %q, want %q", c.shell, c.line, got, c.want)
		}
	}
	for p, want := range map[string]bool{"cmd": true, "CMD.EXE": true, `C:\Windows\system32\cmd.exe`: true, "/mnt/c/cmd.exe": true, "cmdx": false, "sh": false, `C:\cmd\pwsh.exe`: false} {
		if isCmdExe(p) != want {
			t.Errorf("isCmdExe(%q) = %v", p, !want)
		}
	}

	run, err := shellFlag{}.handlerRun("cat; echo")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sh", "-c", "cat; echo"}
	if runtime.GOOS == "windows" {
		want = []string{"cmd.exe", "/d", "/s", "/c", "cat; echo"} // and its own command line, cmdExeLine
	}
	if got := run.command().Args; !slices.Equal(got, want) {
		t.Errorf("default shell: %q, want %q", got, want)
	}
	run, err = shellFlag{Shell: " bash  -euo pipefail -c "}.handlerRun("false | true")
	if err != nil {
		t.Fatal(err)
	}
	if got := run.command().Args; !slices.Equal(got, []string{"bash", "-euo", "pipefail", "-c", "false | true"}) {
		t.Errorf("--shell: %q", got)
	}
	if _, err := (shellFlag{Shell: "   "}).handlerRun("x"); err == nil {
		t.Error("--shell of blanks: no error")
	}
	// A program run without a shell (argv) is run as it is.
	if got := (handlerRun{argv: []string{"./bill", "--fast"}}).command().Args; !slices.Equal(got, []string{"./bill", "--fast"}) {
		t.Errorf("argv: %q", got)
	}
}
