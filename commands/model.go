package commands

import (
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// Building kong's model of every command (tags parsed, help interpolated,
// defaults applied) costs more than the rest of a one-request command's
// start-up together, and allocates enough to make the garbage collector
// run before the request is sent. So a command line that names a command
// gets a model of that command alone: onlyCommand makes kong skip the
// others. The root help, an unknown command, shell completion and the
// manual page (which walk the whole tree) get the full model.

// fullModelCommands are the commands that read the whole command tree.
var fullModelCommands = map[string]bool{"__complete": true, "man": true}

// onlyCommand returns the kong options that leave out of the model every
// command but the one args run, or none when args do not name one plainly
// (no command, an unknown one, a flag before it that is not a global flag).
func onlyCommand(args []string) []kong.Option {
	name := commandName(args)
	if name == "" || fullModelCommands[name] {
		return nil
	}
	var skip []string
	found := false
	t := reflect.TypeFor[CLI]()
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		if commandTagName(f) == name {
			found = true
			continue
		}
		skip = append(skip, f.Name)
	}
	if !found {
		return nil
	}
	return []kong.Option{
		kong.IgnoreFields(`^CLI\.(` + strings.Join(skip, "|") + `)$`),
		// Only the root's help prints the root's description; kong would
		// still interpolate its 2 KB for every run.
		kong.Description(""),
	}
}

// commandTagName is the name a command field of CLI is run by.
func commandTagName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	return strings.ToLower(f.Name)
}

// commandName returns the first argument that is not a global flag or its
// value: the command args run. It returns "" when something before it is
// not plainly a global flag (kong then reports it with the full model).
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a
		}
		takesValue, ok := globalFlag(a)
		if !ok {
			return ""
		}
		if takesValue {
			i++
		}
	}
	return ""
}

// globalFlag reports whether a, as written before the command ("--json",
// "-s", "--server=URL", "--help"), is a global flag, and whether the next
// argument is its value.
func globalFlag(a string) (takesValue, ok bool) {
	var long, short string
	switch {
	case strings.HasPrefix(a, "--"):
		long = a[2:]
		if n, _, hasValue := strings.Cut(long, "="); hasValue {
			_, ok := globalFlag("--" + n)
			return false, ok
		}
	case len(a) == 2:
		short = a[1:]
	default:
		return false, false // -sURL, -js: left to kong
	}
	if long == "help" || short == "h" {
		return false, true
	}
	t := reflect.TypeFor[Globals]()
	for i := range t.NumField() {
		f := t.Field(i)
		if (long != "" && f.Tag.Get("name") == long) || (short != "" && f.Tag.Get("short") == short) {
			return f.Type.Kind() != reflect.Bool, true
		}
	}
	return false, false
}
