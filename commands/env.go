package commands

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
)

// Globals are the flags every command accepts.
type Globals struct {
	Server   string        `short:"s" name:"server" env:"NATS_URL" placeholder:"URL" help:"NATS server URLs, comma separated (default ${default_url})." group:"connection"`
	Context  string        `name:"context" env:"NATS_CONTEXT" placeholder:"NAME" help:"Saved nats CLI context to use (flags override its values)." group:"connection"`
	Creds    string        `name:"creds" env:"NATS_CREDS" placeholder:"FILE" help:"User credentials file." group:"connection"`
	NKey     string        `name:"nkey" env:"NATS_NKEY" placeholder:"FILE" help:"User NKEY seed file." group:"connection"`
	User     string        `name:"user" env:"NATS_USER" placeholder:"USER" help:"User name (with --password)." group:"connection"`
	Password string        `name:"password" env:"NATS_PASSWORD" placeholder:"PASSWORD" help:"Password." group:"connection"`
	Token    string        `name:"token" env:"NATS_TOKEN" placeholder:"TOKEN" help:"Authentication token." group:"connection"`
	TLSCert  string        `name:"tlscert" env:"NATS_CERT" placeholder:"FILE" help:"TLS client certificate." group:"connection"`
	TLSKey   string        `name:"tlskey" env:"NATS_KEY" placeholder:"FILE" help:"TLS client key." group:"connection"`
	TLSCA    string        `name:"tlsca" env:"NATS_CA" placeholder:"FILE" help:"TLS certificate authority." group:"connection"`
	Timeout  time.Duration `name:"timeout" env:"NATS_TIMEOUT" default:"5s" help:"Time to wait for the server to connect and to answer each request." group:"connection"`
	RetryFor time.Duration `name:"retry-for" env:"JSCTL_RETRY_FOR" default:"30s" help:"How long to keep asking a server that leaves a request unanswered (it restarts, a leader is elected) before giving up; stderr says when jsctl waits." group:"connection"`
	JSDomain string        `name:"js-domain" env:"NATS_JS_DOMAIN" placeholder:"DOMAIN" help:"JetStream domain (at most 255 bytes, without spaces, \".\", \"*\" or \">\")." group:"connection"`
	Embedded string        `name:"embedded" env:"JSCTL_EMBEDDED" placeholder:"DIR" help:"Run against an in-process JetStream server over store directory DIR (relative to the working directory; created if missing)." group:"connection"`
	Sync     string        `name:"sync" env:"JSCTL_SYNC" default:"always" placeholder:"always|DURATION" help:"fsync policy of a server jsctl runs (--embedded, serve, demo): always (every write is on disk before it is acknowledged) or a DURATION between background syncs." group:"connection"`
	JSON     bool          `short:"j" name:"json" help:"Print JSON for scripts." group:"output"`
	TZ       string        `name:"tz" env:"JSCTL_TZ" placeholder:"ZONE" help:"Time zone for reading and printing times (IANA name, UTC or Local; default local)." group:"output"`
	Wide     bool          `name:"wide" help:"Print every column of a table, and times at full precision (default: tables fit 80 columns, times 14:31:38.604 today, the date added otherwise)." group:"output"`
	// LogFormat is how stderr is written (log.go).
	LogFormat string `name:"log-format" env:"JSCTL_LOG_FORMAT" default:"text" enum:"text,json" help:"What jsctl writes to stderr: text, or json (one JSON object per line: time, level, msg and fields such as stream, consumer, seq; no progress bars)." group:"output"`
	// The audit trail (audit_change.go).
	auditFlags
}

// Env is what a command's Run receives: the global flags, the standard
// streams, and a lazily opened connection.
type Env struct {
	Globals *Globals
	Stdout  io.Writer
	Stderr  io.Writer
	Stdin   io.Reader
	// IsTerminal reports whether stdin and stdout are an interactive terminal.
	IsTerminal bool
	// StderrIsTerminal reports whether stderr is one (progress is drawn
	// only then).
	StderrIsTerminal bool
	// Now is the clock (time.Now outside tests).
	Now func() time.Time

	// args is the command line (without the program name), for audit
	// events (commandLine masks its secrets).
	args []string

	loc      *time.Location
	client   *jsutil.Client
	embedded *embedded.Server
	// stopsOnSignal is set by commands for which SIGINT/SIGTERM is a normal
	// way to stop (consume): their own error, if any, keeps its exit code.
	stopsOnSignal bool
	// waits draws what jsctl waits for on stderr (waits.go).
	waits *waitLines
	// log is Stderr as --log-format writes it (log.go); Run sets it.
	log *stderrLog
	// notices, when set, gets what jsctl would say on stderr while a
	// full-screen UI owns the terminal (noticesTo, waits.go).
	notices func(string)
}

// stderrLog is jsctl's standard error as --log-format writes it: the one
// Run made, or (an Env made elsewhere, such as the demo's) text over
// Stderr.
func (e *Env) stderrLog() *stderrLog {
	if e.log == nil {
		e.log = &stderrLog{w: e.Stderr, secrets: func() []string { return nil }}
	}
	return e.log
}

// Logger is a log/slog logger for jsctl's own lines on stderr, with fields
// for --log-format json; in text mode it writes "jsctl: MSG" to Stderr.
// While a full-screen UI owns the terminal (noticesTo), the lines go to
// the UI as text, whatever the format.
func (e *Env) Logger() *slog.Logger {
	if e.notices != nil {
		return slog.New(textHandler{w: e.Stderr})
	}
	return e.stderrLog().logger(e.Stderr)
}

// logJSON reports whether stderr is written as JSON (--log-format json):
// then nothing is drawn in place on it.
func (e *Env) logJSON() bool { return e.stderrLog().JSON() }

// Location is the zone of --tz.
func (e *Env) Location() (*time.Location, error) {
	if e.loc != nil {
		return e.loc, nil
	}
	loc, err := jsutil.LoadLocation(e.Globals.TZ)
	if err != nil {
		return nil, err
	}
	e.loc = loc
	return loc, nil
}

// ParseTime reads a time argument in --tz.
func (e *Env) ParseTime(s string) (time.Time, error) {
	loc, err := e.Location()
	if err != nil {
		return time.Time{}, err
	}
	return jsutil.ParseTime(s, e.Now(), loc)
}

// ConnectOptions are the connection settings of the global flags.
func (e *Env) ConnectOptions() jsutil.ConnectOptions {
	g := e.Globals
	return jsutil.ConnectOptions{
		URL: g.Server, Context: g.Context, Creds: g.Creds, NKey: g.NKey,
		User: g.User, Password: g.Password, Token: g.Token,
		TLSCert: g.TLSCert, TLSKey: g.TLSKey, TLSCA: g.TLSCA,
		Timeout: g.Timeout, JSDomain: g.JSDomain,
	}
}

// SyncPolicy is the fsync policy of --sync for servers jsctl runs.
func (e *Env) SyncPolicy() (embedded.Sync, error) {
	return embedded.ParseSync(e.Globals.Sync)
}

// Client connects on first use and returns the same connection afterwards.
// With --embedded it first starts the in-process server over the store.
func (e *Env) Client(ctx context.Context) (*jsutil.Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	opts := e.ConnectOptions()
	if e.Globals.Embedded != "" {
		sync, err := e.SyncPolicy()
		if err != nil {
			return nil, err
		}
		srv, err := embedded.Start(embedded.Options{StoreDir: e.Globals.Embedded, Sync: sync})
		if err != nil {
			return nil, err
		}
		e.embedded = srv
		opts.InProcess, opts.InProcessName = srv, "the embedded server over "+srv.Dir
	}
	c, err := jsutil.Connect(ctx, opts)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.client = c
	return c, nil
}

// Close closes the connection, if one was opened, then stops the embedded
// server, if one was started.
func (e *Env) Close() {
	if e.client != nil {
		e.client.Close()
		e.client = nil
	}
	if e.embedded != nil {
		e.embedded.Shutdown()
		e.embedded = nil
	}
}

// Printer returns an output printer over stdout in the --tz zone.
func (e *Env) Printer() (*Printer, error) {
	loc, err := e.Location()
	if err != nil {
		return nil, err
	}
	return &Printer{W: e.Stdout, JSON: e.Globals.JSON, Loc: loc, Wide: e.Globals.Wide, Now: e.Now, NoteWidth: noteWidth(e.Stdout)}, nil
}

// Session returns the connection and the printer, which most commands need
// together.
func (e *Env) Session(ctx context.Context) (*jsutil.Client, *Printer, error) {
	p, err := e.Printer()
	if err != nil {
		return nil, nil, err
	}
	c, err := e.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}
