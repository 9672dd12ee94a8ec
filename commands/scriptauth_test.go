package commands_test

import (
	"net"
	"regexp"
	"sync"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/rogpeppe/go-internal/testscript"
)

var serverAuthName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// cmdServerAuth starts an extra JetStream server for the script that checks
// its clients, on a random loopback port, stopped when the script ends:
//
//	server-auth NAME --user U --password P [--deny-js]
//	server-auth NAME --token T
//	server-auth NAME --tls
//	server-auth NAME --nkey
//	server-auth NAME --creds
//
// It sets $NAME_URL to the server's URL (tls:// for --tls) and writes the
// files a client needs into $WORK, naming them in variables:
// --tls sets $NAME_CA, $NAME_CERT and $NAME_KEY (a CA generated for the
// script, and a client certificate and key it signed; the server verifies
// client certificates); --nkey sets $NAME_SEED (a user's nkey seed file);
// --creds runs the server in operator (JWT) mode and sets $NAME_CREDS (a
// user's credentials file). --deny-js denies the user publishing to the
// JetStream API ($JS.API.>). NAME is upper case, e.g. AUTH.
func cmdServerAuth(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "usage: server-auth NAME (--user U --password P [--deny-js] | --token T | --tls | --nkey | --creds)"
	if neg {
		ts.Fatalf("unsupported: ! server-auth")
	}
	opts, pos := flagArgs(ts, args, "user", "password", "token")
	if len(pos) != 1 || !serverAuthName.MatchString(pos[0]) {
		ts.Fatalf("%s", usage)
	}
	name := pos[0]
	var a testserver.Auth
	modes := 0
	if u, ok := opts["user"]; ok {
		a.User, a.Password = u[len(u)-1], optStr(opts, "password", "")
		_, a.DenyJS = opts["deny-js"]
		modes++
	}
	if tok, ok := opts["token"]; ok {
		a.Token = tok[len(tok)-1]
		modes++
	}
	for flag, set := range map[string]*bool{"tls": &a.TLS, "nkey": &a.NKey, "creds": &a.Creds} {
		if _, ok := opts[flag]; ok {
			*set = true
			modes++
		}
	}
	for k := range opts {
		switch k {
		case "user", "password", "deny-js", "token", "tls", "nkey", "creds":
		default:
			ts.Fatalf("server-auth: unknown flag --%s; %s", k, usage)
		}
	}
	if modes != 1 || (a.User == "" && (a.Password != "" || a.DenyJS)) {
		ts.Fatalf("%s", usage)
	}
	s, err := testserver.NewAuth(ts.Getenv("WORK"), name, a)
	ts.Check(err)
	ts.Defer(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	ts.Setenv(name+"_URL", s.URL)
	for v, path := range map[string]string{"_CA": s.CA, "_CERT": s.Cert, "_KEY": s.Key, "_SEED": s.Seed, "_CREDS": s.Creds} {
		if path != "" {
			ts.Setenv(name+v, path)
		}
	}
}

// cmdServerSilent starts a TCP listener that accepts connections and never
// says anything, closed when the script ends, and sets $NAME_URL to it:
//
//	server-silent NAME
func cmdServerSilent(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || !serverAuthName.MatchString(args[0]) {
		ts.Fatalf("usage: server-silent NAME")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	ts.Defer(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ts.Setenv(args[0]+"_URL", "nats://"+l.Addr().String())
}
