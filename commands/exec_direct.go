package commands

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

// directArgv is how --exec's command string runs without a shell, where
// that changes nothing but the cost of starting one: on Linux and macOS,
// with no --shell, a line of plain words (no quotes, no $, globs,
// redirections, operators, comments, ~ or variable assignments), whose
// first word is not a shell keyword or builtin and names a program found
// now that the system can start itself (a binary, or a script with #!).
// Anything else returns nil and runs through the shell as before, so a
// line means what sh -c makes of it either way. Starting a shell costs a
// fork+exec of its own per message (docs/performance.md).
func directArgv(line string) []string {
	if runtime.GOOS == "windows" {
		return nil // cmd.exe's builtins and PATHEXT are its own
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return nil
	}
	for i, w := range words {
		for _, r := range w {
			if !plainWordRune(r) || (i == 0 && r == '=') {
				return nil
			}
		}
	}
	if isShellKeyword(words[0]) {
		return nil
	}
	path, err := exec.LookPath(words[0])
	if err != nil || !startsItself(path) {
		return nil // sh says "not found" (exit 127) or runs it as a script
	}
	return words
}

// plainWordRune reports whether r means itself to sh in an unquoted word.
func plainWordRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-_./:,@+%=", r)
}

// shellKeywords are sh's reserved words and builtins (POSIX special and
// regular built-ins, and the common ones of dash and bash): a line that
// starts with one runs in the shell.
const shellKeywords = "if then else elif fi case esac for while until do done in function select time coproc " +
	". : break continue eval exec exit export readonly return set shift times trap unset alias bg cd command " +
	"fc fg getopts hash jobs kill read type ulimit umask unalias wait source local declare typeset let builtin " +
	"enable shopt pushd popd dirs history logout disown suspend printf echo test [ pwd true false"

// isShellKeyword reports whether word is one of shellKeywords.
func isShellKeyword(word string) bool {
	return slices.Contains(strings.Fields(shellKeywords), word)
}

// startsItself reports whether the system's exec starts path as it is: a
// binary (ELF, Mach-O) or a script naming its interpreter (#!). sh also
// runs a script without #! (as a shell script), which exec does not.
func startsItself(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	switch {
	case bytes.HasPrefix(head, []byte("#!")), bytes.Equal(head, []byte("\x7fELF")):
		return true
	}
	for _, magic := range [][]byte{{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}} {
		if bytes.Equal(head, magic) {
			return true
		}
	}
	return false
}
