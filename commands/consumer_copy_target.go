package commands

import (
	"context"

	"github.com/jsctl/jsctl/jsutil"
)

// targetFlags name the replica a failover command works on: --to-stream,
// and where it is when it is not on the first connection's server (another
// cluster, JetStream domain or account): --to-server, --to-context,
// --to-js-domain and --to-creds open a second connection.
type targetFlags struct {
	ToStream   string `name:"to-stream" placeholder:"TARGET" predictor:"stream" help:"The replica: a stream that mirrors or sources the origin stream."`
	ToServer   string `name:"to-server" placeholder:"URL" help:"The replica's server URLs, comma separated (a second connection; default: the first connection's)."`
	ToContext  string `name:"to-context" placeholder:"NAME" help:"Saved nats CLI context of the replica's connection (its server, credentials and domain)."`
	ToJSDomain string `name:"to-js-domain" placeholder:"DOMAIN" help:"JetStream domain of the replica (a leaf node's, another cluster's)."`
	ToCreds    string `name:"to-creds" placeholder:"FILE" help:"User credentials file of the replica's connection."`
}

// validate checks the target flags' values before anything connects.
func (f targetFlags) validate() error {
	if f.ToStream == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "name the replica stream with --to-stream TARGET")
	}
	if why := jsutil.NameProblem(f.ToStream); why != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "invalid stream name %q (--to-stream): %s", f.ToStream, why)
	}
	if f.ToServer != "" {
		if err := jsutil.CheckURLs(f.ToServer); err != nil {
			return err
		}
	}
	if f.ToContext != "" {
		if err := jsutil.CheckContextName(f.ToContext); err != nil {
			return err
		}
	}
	if f.ToJSDomain != "" {
		if err := jsutil.CheckDomain(f.ToJSDomain); err != nil {
			return err
		}
	}
	return nil
}

// second reports whether the target needs a connection of its own.
func (f targetFlags) second() bool {
	return f.ToServer != "" || f.ToContext != "" || f.ToJSDomain != "" || f.ToCreds != ""
}

// connect returns the target's connection: the first one (origin) when no
// --to-* connection flag is given, else a second one, which the caller
// closes with the returned function. The second starts from the first's
// settings; --to-context replaces them with that context's, and
// --to-server, --to-creds and --to-js-domain replace single values (the
// first connection's --js-domain is not carried to another server or
// context).
//
// where names the second connection for people ("" for the first).
func (f targetFlags) connect(ctx context.Context, env *Env, origin *jsutil.Client) (cl *jsutil.Client, where string, closeFn func(), err error) {
	if !f.second() {
		return origin, "", func() {}, nil
	}
	opts := env.ConnectOptions()
	if f.ToContext != "" {
		opts = jsutil.ConnectOptions{Context: f.ToContext, Timeout: env.Globals.Timeout}
	}
	if f.ToServer != "" || f.ToContext != "" {
		opts.JSDomain = ""
		opts.InProcess = nil
	} else if env.embedded != nil {
		opts.InProcess, opts.InProcessName = env.embedded, "the embedded server over "+env.embedded.Dir
	}
	if f.ToServer != "" {
		opts.URL = f.ToServer
	}
	if f.ToCreds != "" {
		opts.Creds = f.ToCreds
	}
	if f.ToJSDomain != "" {
		opts.JSDomain = f.ToJSDomain
	}
	opts.Name = "jsctl (replica)"
	if cl, err = jsutil.Connect(ctx, opts); err != nil {
		return nil, "", nil, err
	}
	where = cl.URL
	if opts.JSDomain != "" {
		where += ", domain " + opts.JSDomain
	}
	return cl, where, cl.Close, nil
}

// allowInexactFlag accepts a failover position that cannot be translated
// exactly (consumer copy, snapshot restore --to-stream).
type allowInexactFlag struct {
	AllowInexact bool `name:"allow-inexact" help:"Copy even where the position cannot be translated exactly (by time, or the replica's copies there came from an earlier stream of the origin's name), with a warning; else refused."`
}
