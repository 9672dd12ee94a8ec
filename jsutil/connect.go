package jsutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultURL is the server tried when no URL is given.
const DefaultURL = nats.DefaultURL

// ConnectOptions say how to reach a JetStream server. They mirror the global
// flags of the nats CLI; values from a saved NATS context fill the fields
// left empty.
type ConnectOptions struct {
	URL      string
	Context  string // name of a saved nats CLI context; "" uses the selected one, if any
	Creds    string
	NKey     string
	User     string
	Password string
	Token    string
	TLSCert  string
	TLSKey   string
	TLSCA    string
	Timeout  time.Duration
	JSDomain string
	// InProcess, when set, connects to a server running in this process
	// (such as an embedded.Server from jsutil/embedded) without TCP; URL,
	// credentials and TLS settings are then ignored. InProcessName names it
	// in errors and in Client.URL.
	InProcess     nats.InProcessConnProvider
	InProcessName string
	// Name is the client connection name shown by the server.
	Name string
	// NoContext ignores saved contexts entirely.
	NoContext bool

	// Set from a saved context only (the nats CLI has no flags for them).
	jsAPIPrefix string
	inboxPrefix string
	tlsFirst    bool
}

// Client is a connection to a JetStream server.
type Client struct {
	NC      *nats.Conn
	JS      jetstream.JetStream
	Timeout time.Duration
	// URL is the server the client connected to, with any user
	// information masked (or the InProcessName of an in-process server).
	URL string

	// User is the identity the connection authenticated as, as the
	// client knows it (no secrets).
	User NATSUser

	// refusals records what the server's permissions refused on this
	// connection (the run's record when Connect's context carries one).
	refusals *Refusals
}

// noteAsyncError records a permissions violation reported asynchronously by
// the server. A request whose publish was denied gets no answer, so this is
// the only trace of why it timed out.
func (c *Client) noteAsyncError(nc *nats.Conn, err error) {
	inbox := nats.InboxPrefix
	if nc != nil && nc.Opts.InboxPrefix != "" {
		inbox = nc.Opts.InboxPrefix + "."
	}
	c.refusals.Note(err, inbox)
}

// Explain returns err classed as a permission error when it is a timeout or
// a lost answer and the server reported a permissions violation on this
// connection that nobody dealt with (see Refusals.Handled): a request the
// server refuses to route is never answered, so without this it would
// look like a slow server. A refusal that was dealt with (a direct get
// refused and read another way, a request whose own error named it) is
// never blamed for another error. Other errors are returned unchanged.
func (c *Client) Explain(err error) error {
	if err == nil || c == nil || errors.Is(err, ErrPermission) {
		return err
	}
	unhandled := c.refusals.Unhandled()
	if len(unhandled) == 0 {
		return err
	}
	if !errors.Is(err, ErrConnection) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return err
	}
	msg := err.Error()
	for _, suffix := range []string{": " + noAnswerText, ": " + context.DeadlineExceeded.Error(), ": " + nats.ErrTimeout.Error()} {
		if strings.HasSuffix(msg, suffix) {
			msg = strings.TrimSuffix(msg, suffix)
			break
		}
	}
	var what []string
	for _, v := range unhandled {
		if subject := DeniedSubject(v); subject != "" {
			what = append(what, DeniedError(subject).Error())
		} else {
			what = append(what, "permission denied ("+v.Error()+")")
		}
	}
	text := what[0]
	if len(what) > 1 {
		text = "the server refused " + plural(len(what), "request") + " of this run: " + strings.Join(what, "; ")
	}
	return Classify(ErrPermission, &explainedErr{msg: msg + ": " + text, err: err})
}

// plural is "1 request" or "n requests".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// noAnswerText is how Wrap words a request that timed out.
const noAnswerText = "no answer from the server in time"

type explainedErr struct {
	msg string
	err error
}

func (e *explainedErr) Error() string { return e.msg }
func (e *explainedErr) Unwrap() error { return e.err }

// Close closes the connection. An in-process server is left running: its
// owner stops it.
func (c *Client) Close() {
	if c == nil {
		return
	}
	if c.NC != nil {
		_ = c.NC.Drain()
		c.NC.Close()
	}
}

// NATSContext is the part of a nats CLI saved context that jsctl uses.
type NATSContext struct {
	Name     string `json:"-"`
	URL      string `json:"url"`
	Token    string `json:"token"`
	User     string `json:"user"`
	Password string `json:"password"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	JSDomain string `json:"jetstream_domain"`
	// JSAPIPrefix, InboxPrefix and TLSFirst are honoured as the nats CLI does.
	JSAPIPrefix string `json:"jetstream_api_prefix"`
	InboxPrefix string `json:"inbox_prefix"`
	TLSFirst    bool   `json:"tls_first"`
}

// natsConfigDir is where the nats CLI keeps its contexts.
func natsConfigDir() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nats"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "nats"), nil
}

// LoadNATSContext reads the nats CLI context called name, or the selected
// context when name is empty. With no name and no selected context it
// returns nil and no error.
func LoadNATSContext(name string) (*NATSContext, error) {
	dir, err := natsConfigDir()
	if err != nil {
		if name == "" {
			return nil, nil
		}
		return nil, fmt.Errorf("find nats contexts: %w", err)
	}
	if name == "" {
		b, err := os.ReadFile(filepath.Join(dir, "context.txt"))
		if err != nil {
			return nil, nil
		}
		name = strings.TrimSpace(string(b))
		if name == "" {
			return nil, nil
		}
	}
	if err := CheckContextName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "context", name+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, Errorf(ErrBadInput, "nats context %q not found (looked for %s)", name, path)
	}
	if err != nil {
		return nil, Errorf(ErrBadInput, "read nats context %q: %w", name, err)
	}
	nctx := &NATSContext{Name: name}
	if err := json.Unmarshal(b, nctx); err != nil {
		return nil, Errorf(ErrBadInput, "read nats context %q from %s: %w", name, path, err)
	}
	return nctx, nil
}

// MaxContextNameLen is the longest context name: the context is the file
// NAME.json, and a file name has at most 255 bytes.
const MaxContextNameLen = 255 - len(".json")

// CheckContextName says why name cannot name a saved nats CLI context.
func CheckContextName(name string) error {
	switch {
	case len(name) > MaxContextNameLen:
		return Errorf(ErrBadInput, "context name %q... (%d bytes) is too long: a context name is at most %d bytes (it names the file NAME.json)", name[:40], len(name), MaxContextNameLen)
	case name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == "..":
		return Errorf(ErrBadInput, "invalid context name %q: a context name is a file name without \"/\" or \"\\\"", name)
	}
	return nil
}

// MaxDomainLen is the longest JetStream domain jsctl accepts, the limit of
// a stream name: the domain is part of every API subject, which must fit
// in one protocol line.
const MaxDomainLen = 255

// CheckDomain says why domain cannot be a JetStream domain, as the server
// judges one (jetstream.go, validateJetStreamOptions): no white space,
// ".", "*" or ">"; jsctl also refuses control characters and more than
// MaxDomainLen bytes. "" (no domain) is fine.
func CheckDomain(domain string) error {
	if domain == "" {
		return nil
	}
	if len(domain) > MaxDomainLen {
		return Errorf(ErrBadInput, "JetStream domain %q... (%d bytes) is too long: a domain is at most %d bytes", domain[:40], len(domain), MaxDomainLen)
	}
	if strings.ContainsAny(domain, ".*>") || strings.IndexFunc(domain, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return Errorf(ErrBadInput, "invalid JetStream domain %q: a domain has no spaces, control characters, \".\", \"*\" or \">\"", domain)
	}
	return nil
}

// Resolve fills the options' empty fields from the saved NATS context (the
// named one, or the selected one) and returns the result.
func (o ConnectOptions) Resolve() (ConnectOptions, error) {
	if o.NoContext || o.InProcess != nil {
		return o, nil
	}
	nctx, err := LoadNATSContext(o.Context)
	if err != nil {
		return o, err
	}
	if nctx == nil {
		return o, nil
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&o.URL, nctx.URL)
	// Credentials are taken as a unit: any credential flag replaces all of
	// the context's, so a context's creds file is never sent along with a
	// user and password given on the command line.
	if o.User == "" && o.Token == "" && o.Creds == "" && o.NKey == "" {
		o.User, o.Token = nctx.User, nctx.Token
		o.Creds, o.NKey = expandHome(nctx.Creds), expandHome(nctx.NKey)
		fill(&o.Password, nctx.Password)
	}
	if o.TLSCert == "" && o.TLSKey == "" {
		o.TLSCert, o.TLSKey = expandHome(nctx.Cert), expandHome(nctx.Key)
	}
	fill(&o.TLSCA, expandHome(nctx.CA))
	fill(&o.JSDomain, nctx.JSDomain)
	o.jsAPIPrefix, o.inboxPrefix, o.tlsFirst = nctx.JSAPIPrefix, nctx.InboxPrefix, nctx.TLSFirst
	return o, nil
}

// expandHome expands a leading "~/" in a path from a saved context, as the
// nats CLI does.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}

// Connect resolves the options and connects. Errors wrap ErrConnection when
// the server cannot be reached and name the URL that was tried; they never
// contain credentials.
func Connect(ctx context.Context, o ConnectOptions) (*Client, error) {
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	if err := CheckDomain(o.JSDomain); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	name := o.Name
	if name == "" {
		name = "jsctl"
	}
	c := &Client{Timeout: o.Timeout, User: natsUserOf(o), refusals: RefusalsOf(ctx)}
	if c.refusals == nil {
		c.refusals = &Refusals{}
	}
	nopts := []nats.Option{
		nats.Name(name), nats.Timeout(o.Timeout), nats.MaxReconnects(-1), nats.NoCallbacksAfterClientClose(),
		nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) { c.noteAsyncError(nc, err) }),
	}
	if o.inboxPrefix != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(o.inboxPrefix))
	}
	dial := ""
	if o.InProcess != nil {
		c.URL = o.InProcessName
		if c.URL == "" {
			c.URL = "the in-process server"
		}
		nopts = append(nopts, nats.InProcessServer(o.InProcess))
	} else {
		auth, err := authOptions(o)
		if err != nil {
			return nil, err
		}
		nopts = append(nopts, auth...)
		dial = o.URL
		if dial == "" {
			dial = DefaultURL
		}
		c.URL = RedactURL(dial)
		if err := CheckURLs(dial); err != nil {
			return nil, err
		}
	}
	nc, err := connectWithin(ctx, dial, c.URL, o.Timeout, nopts)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.NC = nc
	var js jetstream.JetStream
	// Requests made without a deadline of their own wait --timeout, not
	// the jetstream package's default.
	jsOpts := []jetstream.JetStreamOpt{jetstream.WithDefaultTimeout(o.Timeout)}
	switch {
	case o.JSDomain != "":
		js, err = jetstream.NewWithDomain(nc, o.JSDomain, jsOpts...)
	case o.jsAPIPrefix != "":
		js, err = jetstream.NewWithAPIPrefix(nc, o.jsAPIPrefix, jsOpts...)
	default:
		js, err = jetstream.New(nc, jsOpts...)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open jetstream: %w", err)
	}
	c.JS = js
	return c, nil
}

// connectWithin dials the server, bounded by timeout and ctx.
// shown is how errors name the server.
func connectWithin(ctx context.Context, url, shown string, timeout time.Duration, opts []nats.Option) (*nats.Conn, error) {
	type result struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(url, opts...)
		ch <- result{nc, err}
	}()
	t := time.NewTimer(timeout + time.Second)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, connectError(shown, r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, Errorf(ErrCancelled, "connect to %s: %w", shown, ctx.Err())
	case <-t.C:
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, Errorf(ErrConnection, "connect to %s: no answer within %s%s", shown, timeout, ServerHint)
	}
}

func connectError(url string, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		strings.Contains(strings.ToLower(err.Error()), "authorization"):
		return Errorf(ErrPermission, "connect to %s: authorization failed (check --user/--password, --token, --creds or --nkey)", url)
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, syscall.ECONNREFUSED):
		return Errorf(ErrConnection, "connect to %s: no server answered (connection refused)%s", url, ServerHint)
	case errors.Is(err, nats.ErrTimeout), isNetTimeout(err):
		return Errorf(ErrConnection, "connect to %s: timed out%s", url, ServerHint)
	}
	return Errorf(ErrConnection, "connect to %s: %w%s", url, err, ServerHint)
}

// ServerHint ends every error of a connection that failed (refused, timed
// out, unanswered): how to name another server.
const ServerHint = "; choose the server with -s URL, NATS_URL or --context NAME"

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// urlForms is the hint after a server URL that cannot be read. MaskURLs
// leaves it as written: its "[user:password@]" is a placeholder, not user
// information.
const urlForms = "use nats://[user:password@]host[:port], tls://... or ws://..., comma separated"

// urlSchemes are the schemes the NATS client dials as they say; it would
// dial any other (ftp://h) as plain nats://.
var urlSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}

// CheckURLs reads each URL of a comma-separated server list as the NATS
// client will (a URL without a scheme gets nats://) and returns a usage
// error for the first one it cannot read, for an unknown scheme, and for an
// empty entry (the client would dial 127.0.0.1:4222 in its place). An empty
// list is the default URL. The error shows the URL without its user
// information and says what is wrong in fixed words, never quoting the
// URL's text, so no part of a password can leak through it.
func CheckURLs(list string) error {
	if list == "" {
		return nil
	}
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return Errorf(ErrBadInput, "server URL list %q has an empty entry (no server between two commas, or at either end): %s", RedactURL(list), urlForms)
		}
		full := raw
		if !strings.Contains(full, "://") {
			full = "nats://" + full
		}
		u, err := url.Parse(full)
		if err == nil && u.Host == "" {
			err = errors.New("no host")
		}
		if err == nil {
			if p := u.Port(); p != "" {
				if n, perr := strconv.Atoi(p); perr != nil || n < 0 || n > 65535 {
					err = errors.New("invalid port")
				}
			}
		}
		if err == nil && !urlSchemes[u.Scheme] {
			err = errors.New("unknown scheme")
		}
		if err != nil {
			return Errorf(ErrBadInput, "server URL %s cannot be read (%s): %s", RedactURL(raw), urlProblem(err), urlForms)
		}
	}
	return nil
}

// urlProblem names what is wrong with a URL in fixed words.
func urlProblem(err error) string {
	msg := err.Error()
	for _, p := range []string{"invalid port", "invalid URL escape", "missing ']' in host", "invalid character", "invalid userinfo", "no host", "unknown scheme"} {
		if strings.Contains(msg, p) {
			return strings.ReplaceAll(p, "invalid URL escape", "a % not followed by two hex digits")
		}
	}
	return "malformed"
}

// userInfoInURL matches the user information of a URL in any text.
var userInfoInURL = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@"']*@`)

// MaskURLs replaces the user information of every URL in s with ***, so an
// error text can be printed whatever produced it. The hint after an
// unreadable URL is left as written.
func MaskURLs(s string) string {
	parts := strings.Split(s, urlForms)
	for i, p := range parts {
		parts[i] = userInfoInURL.ReplaceAllString(p, "${1}***@")
	}
	return strings.Join(parts, urlForms)
}

// RedactURL removes user information from each URL of a comma-separated
// server list, so it can be printed.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if at := strings.LastIndex(p, "@"); at >= 0 {
			scheme := ""
			if j := strings.Index(p, "://"); j >= 0 && j < at {
				scheme = p[:j+3]
			}
			p = scheme + "***@" + p[at+1:]
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// authOptions turns credentials and TLS settings into client options.
// Like the nats CLI, a user, a credentials file and an nkey seed are
// alternatives (in that order of preference); a token may go with any.
// Files are checked here so a wrong path is a usage error naming the file.
func authOptions(o ConnectOptions) ([]nats.Option, error) {
	var opts []nats.Option
	if o.Password != "" && o.User == "" {
		return nil, Errorf(ErrBadInput, "--password needs --user")
	}
	switch {
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	case o.Creds != "":
		if err := readable(o.Creds); err != nil {
			return nil, Errorf(ErrBadInput, "credentials file %q: %w", o.Creds, err)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	case o.NKey != "":
		if err := readable(o.NKey); err != nil {
			return nil, Errorf(ErrBadInput, "nkey seed file %q: %w", o.NKey, err)
		}
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, Errorf(ErrBadInput, "nkey seed file %q: %w", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, Errorf(ErrBadInput, "--tlscert and --tlskey must be given together")
	}
	if o.TLSCert != "" {
		for _, f := range []string{o.TLSCert, o.TLSKey} {
			if err := readable(f); err != nil {
				return nil, Errorf(ErrBadInput, "tls file %q: %w", f, err)
			}
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		if err := readable(o.TLSCA); err != nil {
			return nil, Errorf(ErrBadInput, "tls ca file %q: %w", o.TLSCA, err)
		}
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.tlsFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return opts, nil
}

// readable reports why a file cannot be read, if it cannot.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	return f.Close()
}

// WithTimeout returns a context bounded by the client's request timeout.
func (c *Client) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.Timeout)
}
