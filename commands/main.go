// Package commands is the jsctl command line: kong command structs (one file
// per command), output, prompts and exit codes. It talks to JetStream only
// through jsutil.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
	_ "time/tzdata" // --tz works on machines without a zone database

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
)

// Main runs jsctl with args (without the program name) on the process's
// standard streams and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...) // signals_unix.go, signals_windows.go
	defer stop()
	context.AfterFunc(ctx, stop) // after the first signal, a second one kills at once
	catchSIGPIPE()
	return Run(ctx, args, os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stdin) && isTerminal(os.Stdout))
}

// exitRequest is how kong's own exits (after --help) reach Run.
type exitRequest struct{ code int }

// Run runs jsctl with explicit streams; Main is Run on the process's own.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, terminal bool) int {
	return RunAt(ctx, time.Now, args, stdin, stdout, stderr, terminal)
}

// RunAt is Run with a clock: now is what relative times ("-30s",
// --by-duration, --for) count from, as if the command ran at that moment.
func RunAt(ctx context.Context, now func() time.Time, args []string, stdin io.Reader, stdout, stderr io.Writer, terminal bool) (code int) {
	out := &stdoutWriter{w: stdout}
	log := newStderrLog(stderr, args) // --log-format (log.go)
	stderr = log
	defer func() { code = outputCode(code, out.err, stderr) }()
	stdout = out
	cli := &CLI{}
	env := &Env{Globals: &cli.Globals, Stdout: stdout, Stderr: stderr, Stdin: stdin, IsTerminal: terminal, StderrIsTerminal: stderrIsTerminal(unwrapStderr(stderr)), Now: now, log: log, args: args}
	defer env.Close()
	args, topic := helpArgs(args)
	if topic != "" {
		if printTopic(stdout, topic, helpWidth(stdout)) != nil {
			return writeFailed(stderr, out.err)
		}
		return ExitOK
	}
	parser, err := newParser(cli, env, stdout, stderr, onlyCommand(args)...)
	if err != nil {
		fmt.Fprintf(stderr, "jsctl: error: %s\n", TermSafe(err.Error()))
		return ExitFailure
	}
	if word := unknownHelpWord(parser.Model, args); word != "" {
		fmt.Fprintf(stderr, "jsctl: error: no command or help topic %q\nhelp topics: %s (jsctl help TOPIC); the commands: jsctl help\n", TermSafe(word), strings.Join(topicNames(), ", "))
		return ExitUsage
	}
	defer catchPanic(&code, stderr, &cli.Globals)
	kctx, err := parser.Parse(relativeTimeArgs(parser.Model, args))
	if err == nil {
		log.setFormat(cli.Globals.LogFormat)
		log.setSecrets(func() []string { return []string{cli.Globals.Password, cli.Globals.Token} })
	}
	if err != nil && out.err != nil { // help that could not be written
		return writeFailed(stderr, out.err)
	}
	if err != nil {
		err = narrowSuggestions(err)
		fmt.Fprintf(stderr, "jsctl: error: %s\n", TermSafe(err.Error()))
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(stderr, "run \"%s --help\" for usage\n", strings.TrimSpace("jsctl "+commandPath(pe.Context)))
			return usageFailed(pe.Context, stdout, err)
		}
		return ExitUsage
	}
	err = checkArgs(kctx)
	if err == nil {
		err = checkGlobals(&cli.Globals)
	}
	if err != nil {
		fmt.Fprintf(stderr, "jsctl: error: %s\n", TermSafe(err.Error()))
		return usageFailed(kctx, stdout, err)
	}
	ctx = jsutil.WithRetry(ctx, cli.Globals.RetryFor, env.waitLines().unanswered)
	// What the library does differently because the server refused a
	// request (a direct get read as a message get) is said once.
	ctx = jsutil.WithRefusals(ctx, func(msg string) { env.waitLines().plain("refusal\x00"+msg, "warning: "+msg) })
	kctx.BindTo(ctx, (*context.Context)(nil))
	err = kctx.Run()
	if err == nil {
		return ExitOK
	}
	err = env.client.Explain(err) // a denied request times out; say why
	if ctx.Err() != nil && !env.stopsOnSignal && !errors.Is(err, jsutil.ErrCancelled) {
		err = jsutil.Classify(jsutil.ErrCancelled, err)
	}
	if msg := errorText(err); msg != "" && !brokenPipe(err) {
		fmt.Fprintf(stderr, "jsctl: error: %s\n", TermSafe(maskSecrets(msg, &cli.Globals)))
	}
	return exitCode(err)
}

// outputCode is Run's exit code once standard output's fate is known: a
// command that succeeded but could not write its output failed (exit 1),
// except on a closed pipe (jsctl ... | head), where the reader took what it
// wanted: that ends quietly with the command's own code.
func outputCode(code int, werr error, stderr io.Writer) int {
	switch {
	case werr == nil:
		return code
	case brokenPipe(werr):
		if code == ExitFailure {
			return ExitOK // the failure was the closed pipe itself
		}
		return code
	case code == ExitOK:
		return writeFailed(stderr, werr)
	}
	return code
}

// writeFailed reports output that could not be written (once: a command
// whose own error it is has printed it already) and is exit 1, or 0 on a
// pipe its reader closed (outputCode).
func writeFailed(stderr io.Writer, werr error) int {
	if brokenPipe(werr) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "jsctl: error: %v\n", werr)
	return ExitFailure
}

// catchPanic, deferred by Run, turns kong's exit after --help into its
// code, and any other panic into exit 1 with a message saying it is a bug
// and the stack for the report: a crash must not exit 2 (the Go runtime's
// code for a panic), which reads as "usage or bad input".
func catchPanic(code *int, stderr io.Writer, g *Globals) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(exitRequest); ok {
		*code = e.code
		return
	}
	fmt.Fprintf(stderr, "jsctl: internal error (a bug in jsctl, please report it with the trace below): %s\n%s",
		maskSecrets(fmt.Sprint(r), g), debug.Stack())
	*code = ExitFailure
}

// maskSecrets is the last guard before an error is printed: the user
// information of any URL, and the --password and --token values wherever
// they appear, become ***.
func maskSecrets(msg string, g *Globals) string {
	msg = jsutil.MaskURLs(msg)
	for _, secret := range []string{g.Password, g.Token} {
		if len(secret) >= 3 {
			msg = strings.ReplaceAll(msg, secret, "***")
		}
	}
	return msg
}

func commandPath(kctx *kong.Context) string {
	if kctx == nil {
		return ""
	}
	var parts []string
	for _, f := range strings.Fields(kctx.Command()) {
		if !strings.HasPrefix(f, "<") {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, " ")
}

func newParser(cli *CLI, env *Env, stdout, stderr io.Writer, opts ...kong.Option) (*kong.Kong, error) {
	return kong.New(cli, append([]kong.Option{
		kong.Name("jsctl"),
		kong.Description(rootHelp),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, FlagsLast: true}),
		kong.Help(helpPrinter(helpWidth(stdout))),
		kong.Vars{
			"default_url": jsutil.DefaultURL,
		},
		kong.ExplicitGroups([]kong.Group{
			{Key: "output", Title: "Output flags (every command):"},
			{Key: "connection", Title: "Connection flags (every command; see jsctl help connecting):"},
			{Key: "audit", Title: "Audit flags (changing commands; see docs/audit.md):"},
		}),
		kong.Bind(env),
		kong.WithHyphenPrefixedParameters(true),
	}, opts...)...)
}

// suggestion matches kong's "unknown flag --al, did you mean one of
// "--tz", "--all"?" (and the same for commands).
var suggestion = regexp.MustCompile(`^(.* (\S+)), did you mean (?:one of )?((?:"[^"]*"(?:, )?)+)\?$`)

// narrowSuggestions keeps, of the names kong suggests for a mistyped word,
// those the word begins (--al suggests --all, not --tz); when none does,
// all of them. The error keeps its kind (errors.As finds the parse error).
func narrowSuggestions(err error) error {
	m := suggestion.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	var all, prefixed []string
	for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(m[3], -1) {
		all = append(all, q)
		if strings.HasPrefix(strings.Trim(q, `"`), m[2]) {
			prefixed = append(prefixed, q)
		}
	}
	if len(prefixed) == 0 || len(prefixed) == len(all) {
		return err
	}
	if len(prefixed) == 1 {
		return &rewordedError{err, fmt.Sprintf("%s, did you mean %s?", m[1], prefixed[0])}
	}
	return &rewordedError{err, fmt.Sprintf("%s, did you mean one of %s?", m[1], strings.Join(prefixed, ", "))}
}

// rewordedError is err with another message.
type rewordedError struct {
	err error
	msg string
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

// relativeDuration matches a relative time written as a negative duration,
// such as -90m or -1d12h.
var relativeDuration = regexp.MustCompile(`^-(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+$`)

// relativeTimeArgs rewrites arguments like "-90m" to "now-90m", which the
// time parser reads the same way, so the command-line parser does not take
// them for short flags. The value of a flag that is not a time (a duration
// such as --idle -1s, a number) is left alone, so its own check can say what
// is wrong with it. Arguments after "--" are left alone.
func relativeTimeArgs(model *kong.Application, args []string) []string {
	nonTime := nonTimeValueFlags(model)
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if relativeDuration.MatchString(a) && (i == 0 || !nonTime[args[i-1]]) {
			a = "now" + a
		}
		out[i] = a
	}
	return out
}

// nonTimeValueFlags returns, as typed on a command line ("--idle", "-s"),
// the flags of every command that take a value that is not a time.
func nonTimeValueFlags(model *kong.Application) map[string]bool {
	out := map[string]bool{}
	if model == nil {
		return out
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.IsBool() || f.IsCounter() || predictorOf(f.Value) == predictTime {
				continue
			}
			out["--"+f.Name] = true
			if f.Short != 0 {
				out["-"+string(f.Short)] = true
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(model.Node)
	return out
}
