package jsutil_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

func startAuth(t *testing.T, a testserver.Auth) *testserver.AuthServer {
	t.Helper()
	s, err := testserver.NewAuth(t.TempDir(), "auth", a)
	if err != nil {
		t.Fatalf("start auth server: %v", err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// useJS proves the connection reaches JetStream: it creates a stream and
// publishes to it.
func useJS(t *testing.T, c *jsutil.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "AUTH", Subjects: []string{"auth.>"}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := c.JS.Publish(ctx, "auth.x", []byte("hello")); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func connect(t *testing.T, o jsutil.ConnectOptions) (*jsutil.Client, error) {
	t.Helper()
	o.NoContext = true
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	c, err := jsutil.Connect(context.Background(), o)
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

func TestConnectAuth(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		s := startAuth(t, testserver.Auth{User: "app", Password: "s3cret"})
		c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, User: "app", Password: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		useJS(t, c)
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, User: "app", Password: "wrong"})
		wantErr(t, err, jsutil.ErrPermission, "authorization failed", s.URL)
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("error shows the password: %v", err)
		}
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, Password: "s3cret"})
		wantErr(t, err, jsutil.ErrBadInput, "--password needs --user")
	})
	t.Run("token", func(t *testing.T) {
		s := startAuth(t, testserver.Auth{Token: "t0ken"})
		c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, Token: "t0ken"})
		if err != nil {
			t.Fatal(err)
		}
		useJS(t, c)
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL})
		wantErr(t, err, jsutil.ErrPermission, "authorization failed")
	})
	t.Run("tls", func(t *testing.T) {
		s := startAuth(t, testserver.Auth{TLS: true})
		c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, TLSCA: s.CA, TLSCert: s.Cert, TLSKey: s.Key})
		if err != nil {
			t.Fatal(err)
		}
		useJS(t, c)
		// The server's certificate is not trusted without the CA.
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, TLSCert: s.Cert, TLSKey: s.Key})
		wantErr(t, err, jsutil.ErrConnection, s.URL)
		// The server wants a client certificate.
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, TLSCA: s.CA})
		if err == nil {
			t.Fatal("connected without a client certificate")
		}
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, TLSCA: s.CA, TLSCert: s.Cert})
		wantErr(t, err, jsutil.ErrBadInput, "--tlscert and --tlskey")
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, TLSCA: s.CA, TLSCert: s.Cert, TLSKey: s.Key + ".missing"})
		wantErr(t, err, jsutil.ErrBadInput, ".missing")
	})
	t.Run("nkey", func(t *testing.T) {
		s := startAuth(t, testserver.Auth{NKey: true})
		c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, NKey: s.Seed})
		if err != nil {
			t.Fatal(err)
		}
		useJS(t, c)
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL, NKey: filepath.Join(t.TempDir(), "none.nk")})
		wantErr(t, err, jsutil.ErrBadInput, "none.nk")
	})
	t.Run("creds", func(t *testing.T) {
		s := startAuth(t, testserver.Auth{Creds: true})
		c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, Creds: s.Creds})
		if err != nil {
			t.Fatal(err)
		}
		useJS(t, c)
		_, err = connect(t, jsutil.ConnectOptions{URL: s.URL})
		wantErr(t, err, jsutil.ErrPermission, "authorization failed")
	})
}

func wantErr(t *testing.T, err, class error, texts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", class)
	}
	if !errors.Is(err, class) {
		t.Fatalf("error %q is not %v", err, class)
	}
	for _, s := range texts {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestConnectRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://%s", l.Addr())
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = connect(t, jsutil.ConnectOptions{URL: url, Timeout: time.Second})
	wantErr(t, err, jsutil.ErrConnection, url, "connection refused", jsutil.ServerHint)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused connection took %s", d)
	}
	// Credentials in the URL are not shown.
	_, err = connect(t, jsutil.ConnectOptions{URL: "nats://me:pw@" + l.Addr().String(), Timeout: time.Second})
	wantErr(t, err, jsutil.ErrConnection, "nats://***@"+l.Addr().String())
}

// TestConnectSilentServer: a server that accepts TCP and never speaks must
// fail as a connection error within about the timeout.
func TestConnectSilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	defer func() {
		l.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
			default:
				c.Close()
			}
		}
	}()
	const timeout = 500 * time.Millisecond
	start := time.Now()
	_, err = connect(t, jsutil.ConnectOptions{URL: "nats://" + l.Addr().String(), Timeout: timeout})
	took := time.Since(start)
	wantErr(t, err, jsutil.ErrConnection, l.Addr().String(), jsutil.ServerHint)
	if took > 5*timeout+time.Second {
		t.Errorf("silent server: gave up after %s, timeout %s", took, timeout)
	}
	t.Logf("silent server: %v after %s", err, took)
}

func TestConnectCancelled(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = jsutil.Connect(ctx, jsutil.ConnectOptions{URL: "nats://" + l.Addr().String(), NoContext: true, Timeout: 5 * time.Second})
	wantErr(t, err, jsutil.ErrCancelled)
}

// TestPermissionDenied: a user who may not publish to the JetStream API gets
// a permission error, not a timeout.
func TestPermissionDenied(t *testing.T) {
	s := startAuth(t, testserver.Auth{User: "ro", Password: "pw", DenyJS: true})
	c, err := connect(t, jsutil.ConnectOptions{URL: s.URL, User: "ro", Password: "pw", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := c.WithTimeout(context.Background())
	defer cancel()
	_, err = c.JS.Stream(ctx, "ORDERS")
	err = c.Explain(jsutil.Wrap(err, "get stream %q", "ORDERS"))
	wantErr(t, err, jsutil.ErrPermission, `get stream "ORDERS": permission denied`, "$JS.API.STREAM.INFO.ORDERS")
	t.Logf("%v", err)

	// Errors of other kinds are left alone.
	other := jsutil.Errorf(jsutil.ErrNotFound, "stream %q not found", "X")
	if got := c.Explain(other); got != other {
		t.Errorf("Explain changed an unrelated error: %v", got)
	}
}

func writeContext(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, "nats", "context", name+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNATSContext(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", filepath.Join(cfg, "home"))
	writeContext(t, cfg, "dev", `{"url": "nats://dev:4222", "user": "devuser", "password": "devpw", "ca": "~/ca.pem", "jetstream_domain": "hub"}`)
	writeContext(t, cfg, "prod", `{"url": "nats://prod:4222", "creds": "~/prod.creds", "cert": "/c.pem", "key": "/k.pem"}`)

	// No selected context: nothing changes.
	o, err := jsutil.ConnectOptions{}.Resolve()
	if err != nil || o.URL != "" {
		t.Fatalf("no context: %+v, %v", o, err)
	}
	// The named one.
	o, err = jsutil.ConnectOptions{Context: "dev"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.URL != "nats://dev:4222" || o.User != "devuser" || o.Password != "devpw" || o.JSDomain != "hub" ||
		o.TLSCA != filepath.Join(cfg, "home", "ca.pem") {
		t.Errorf("dev context: %+v", o)
	}
	// The selected one, from context.txt.
	if err := os.WriteFile(filepath.Join(cfg, "nats", "context.txt"), []byte("prod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = jsutil.ConnectOptions{}.Resolve()
	if err != nil || o.URL != "nats://prod:4222" || o.Creds != filepath.Join(cfg, "home", "prod.creds") {
		t.Errorf("selected context: %+v, %v", o, err)
	}
	// Flags override, and credentials are replaced as a unit.
	o, err = jsutil.ConnectOptions{URL: "nats://flag:4222", User: "flaguser", Password: "flagpw", TLSCert: "/mine.pem", TLSKey: "/mine.key"}.Resolve()
	if err != nil || o.URL != "nats://flag:4222" || o.User != "flaguser" || o.Creds != "" || o.TLSCert != "/mine.pem" || o.TLSKey != "/mine.key" {
		t.Errorf("flags over context: %+v, %v", o, err)
	}
	// NoContext ignores the selection.
	if o, _ := (jsutil.ConnectOptions{NoContext: true}).Resolve(); o.URL != "" {
		t.Errorf("NoContext: %+v", o)
	}
	// A missing or malformed context is a usage error naming it.
	_, err = jsutil.ConnectOptions{Context: "nope"}.Resolve()
	wantErr(t, err, jsutil.ErrBadInput, `"nope"`, filepath.Join(cfg, "nats", "context", "nope.json"))
	writeContext(t, cfg, "broken", `{"url": `)
	_, err = jsutil.ConnectOptions{Context: "broken"}.Resolve()
	wantErr(t, err, jsutil.ErrBadInput, `"broken"`)
	_, err = jsutil.ConnectOptions{Context: "../x"}.Resolve()
	wantErr(t, err, jsutil.ErrBadInput, "../x")
}

// TestNATSContextConnects: a context's URL and credentials really connect.
func TestNATSContextConnects(t *testing.T) {
	s := startAuth(t, testserver.Auth{TLS: true})
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	writeContext(t, cfg, "tls", fmt.Sprintf(`{"url": %q, "ca": %q, "cert": %q, "key": %q}`, s.URL, s.CA, s.Cert, s.Key))
	c, err := jsutil.Connect(context.Background(), jsutil.ConnectOptions{Context: "tls", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	useJS(t, c)
}

// TestConnectTimeoutApplies: --timeout bounds JetStream requests that have
// no deadline of their own, not only the connection.
func TestConnectTimeoutApplies(t *testing.T) {
	s := testserver.Start(t)
	c, err := connect(t, jsutil.ConnectOptions{URL: s.ClientURL(), Timeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.JS.Options().DefaultTimeout; got != 1500*time.Millisecond {
		t.Errorf("JetStream default timeout %s, want the connect timeout 1.5s", got)
	}
	if c.Timeout != 1500*time.Millisecond {
		t.Errorf("Client.Timeout = %s", c.Timeout)
	}
}

// TestMaskURLs: the user information of every URL in a text is masked.
func TestMaskURLs(t *testing.T) {
	for in, want := range map[string]string{
		`parse "nats://admin:s3cret@127.0.0.1:notaport": invalid port`: `parse "nats://***@127.0.0.1:notaport": invalid port`,
		`a tls://u@h:1 and WS://x:y@z`:                                 `a tls://***@h:1 and WS://***@z`,
		`no url here, me@example.com`:                                  `no url here, me@example.com`,
		// The hint after an unreadable URL is not user information.
		`URL nats://a:b@h:x cannot be read: use nats://[user:password@]host[:port], tls://... or ws://..., comma separated`: `URL nats://***@h:x cannot be read: use nats://[user:password@]host[:port], tls://... or ws://..., comma separated`,
		`nats://[user:pw@]h`: `nats://***@]h`,
	} {
		if got := jsutil.MaskURLs(in); got != want {
			t.Errorf("MaskURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckURLs: a URL the client cannot read is bad input whose text
// holds no part of the user information.
func TestCheckURLs(t *testing.T) {
	for _, ok := range []string{"", "127.0.0.1", "nats://127.0.0.1:4222", "tls://a:b@host:1, nats://[::1]:4222", "ws://h", "WSS://h:443", "NATS://h"} {
		if err := jsutil.CheckURLs(ok); err != nil {
			t.Errorf("CheckURLs(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"nats://admin:s3cret@127.0.0.1:notaport", "[::1", "%zz", "nats://u:s3%zzcret@h", "nats://u:s3cret@h:70000", "nats://",
		",", " ", "nats://u:s3cret@h,", ",,nats://h", "ftp://u:s3cret@h:4222", "http://h"} {
		err := jsutil.CheckURLs(bad)
		if !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("CheckURLs(%q) = %v, want bad input", bad, err)
			continue
		}
		if strings.Contains(err.Error(), "s3") {
			t.Errorf("CheckURLs(%q) shows the password: %v", bad, err)
		}
	}
}

// TestCheckDomainAndContextName: a domain the server could not route and a
// context name no file can have are bad input, found before dialling; a
// long value is not quoted whole.
func TestCheckDomainAndContextName(t *testing.T) {
	long := strings.Repeat("a", 10*1024)
	for _, ok := range []string{"", "hub", "leaf-1", "a/b"} {
		if err := jsutil.CheckDomain(ok); err != nil {
			t.Errorf("CheckDomain(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"a b", "a.b", "*", "x>", "a\tb", "a\x01b", long} {
		err := jsutil.CheckDomain(bad)
		if !errors.Is(err, jsutil.ErrBadInput) || strings.Contains(err.Error(), long[:100]) {
			t.Errorf("CheckDomain(%.20q) = %.200v, want bad input", bad, err)
		}
	}
	if _, err := jsutil.Connect(context.Background(), jsutil.ConnectOptions{URL: "nats://127.0.0.1:1", JSDomain: "a b", NoContext: true}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("Connect with domain \"a b\" = %v, want bad input before dialling", err)
	}
	for _, ok := range []string{"dev", "a.b", long[:jsutil.MaxContextNameLen]} {
		if err := jsutil.CheckContextName(ok); err != nil {
			t.Errorf("CheckContextName(%.20q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"a/b", `a\b`, ".", "..", "a\x00b", long[:jsutil.MaxContextNameLen+1]} {
		err := jsutil.CheckContextName(bad)
		if !errors.Is(err, jsutil.ErrBadInput) || strings.Contains(err.Error(), long[:100]) {
			t.Errorf("CheckContextName(%.20q) = %.200v, want bad input", bad, err)
		}
	}
}
