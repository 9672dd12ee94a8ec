package commands

import (
	"fmt"
	"reflect"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
)

// The checks in this file run on every command line before a command runs
// and before anything connects: a value the server cannot take is a usage
// error at once, never a timeout or a dropped connection later.

// checkName refuses name as a stream or consumer name (kind says which)
// that the server cannot take (jsutil.NameProblem). A bad name is bad
// input: without this the server never answers the request and jsctl
// waited out --timeout.
func checkName(kind, name string) error {
	if jsutil.NameProblem(name) == "" {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "invalid %s name %q: a name is 1 to %d bytes without spaces, tabs, line breaks, \".\", \"*\", \">\", \"/\" or \"\\\"", kind, name, jsutil.MaxNameLen)
}

// checkArgs checks, before a command runs and before anything connects,
// every value given on the command line that names a stream or a consumer
// (arguments and flags tagged predictor:"stream" or predictor:"consumer":
// every consumer command and any command added later), ack scopes
// (predictor:"scope") and buckets (--bucket, --acks-bucket), that no
// duration is negative, and that no single-value flag is given twice.
func checkArgs(kctx *kong.Context) error {
	if err := checkRepeatedFlags(kctx); err != nil {
		return err
	}
	for _, el := range kctx.Path {
		var v *kong.Value
		switch {
		case el.Positional != nil:
			v = el.Positional
		case el.Flag != nil:
			v = el.Flag.Value
		default:
			continue
		}
		switch kind := v.Tag.Get("predictor"); kind {
		case predictStream, predictConsumer:
			for _, name := range stringValues(v.Target) {
				if err := checkName(kind, name); err != nil {
					return err
				}
			}
		case predictScope:
			for _, name := range stringValues(v.Target) {
				if err := checkScopeName(flagOrArg(v), name); err != nil {
					return err
				}
			}
		}
		if bucketFlags[v.Name] && v.Flag != nil {
			for _, name := range stringValues(v.Target) {
				if err := checkBucketName(flagOrArg(v), name); err != nil {
					return err
				}
			}
		}
		if d, ok := v.Target.Interface().(time.Duration); ok && d < 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "%s: a negative duration is not allowed, got %s", flagOrArg(v), d)
		}
	}
	return nil
}

// checkRepeatedFlags refuses a flag that takes one value given more than
// once on the command line (--to-seq 1 --to-seq 3, --mode twice, -s twice):
// kong keeps the last, so a script that builds its command line by
// appending would act on whichever came last, silently. Repeatable flags
// (slices, maps, counters) may be repeated. Values are not quoted: one may
// be a password.
func checkRepeatedFlags(kctx *kong.Context) error {
	seen := map[*kong.Flag]bool{}
	for _, el := range kctx.Path {
		f := el.Flag
		if f == nil || el.Resolved || f.IsCumulative() || f.IsCounter() {
			continue
		}
		if seen[f] {
			if f.IsBool() {
				return jsutil.Errorf(jsutil.ErrBadInput, "--%s is given more than once: give it once", f.Name)
			}
			return jsutil.Errorf(jsutil.ErrBadInput, "--%s is given more than once: it takes one value, give it once", f.Name)
		}
		seen[f] = true
	}
	return nil
}

func flagOrArg(v *kong.Value) string {
	if v.Flag != nil {
		return "--" + v.Name
	}
	return v.Name
}

// stringValues returns a string or []string target's values.
func stringValues(target reflect.Value) []string {
	switch t := target.Interface().(type) {
	case string:
		return []string{t}
	case []string:
		return t
	}
	return nil
}

// bucketFlags are the flags that name a KV bucket.
var bucketFlags = map[string]bool{"bucket": true, "acks-bucket": true}

// checkBucketName says why name cannot be a KV bucket name
// (jsutil.BucketNameOK).
func checkBucketName(flag, name string) error {
	if jsutil.BucketNameOK(name) {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "%s %s is not a bucket name: a bucket name is 1 to %d letters, digits, \"-\" or \"_\"", flag, shortQuote(name), jsutil.MaxBucketLen)
}

// maxScopeLen bounds an ack scope name (--scope): the longest default scope,
// STREAM.CONSUMER of two 255-byte names, fits, and so does the record key
// the scope is part of within the server's limit for a subject in one
// protocol line (4 KiB), even with every byte escaped.
const maxScopeLen = 2*jsutil.MaxNameLen + 1

// checkScopeName says why name cannot be an ack scope name.
func checkScopeName(flag, name string) error {
	if len(name) <= maxScopeLen {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "%s %s is too long: a scope is at most %d bytes", flag, shortQuote(name), maxScopeLen)
}

// checkGlobals checks the connection settings that name things, whether
// they come from flags or from the environment: a JetStream domain the
// server could not route, and a context name no file can have.
func checkGlobals(g *Globals) error {
	if err := g.auditFlags.validate(); err != nil {
		return err
	}
	if g.RetryFor <= 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--retry-for %s: want a positive duration such as 30s or 2m", g.RetryFor)
	}
	if err := jsutil.CheckDomain(g.JSDomain); err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "--js-domain: %w", err)
	}
	if g.Context != "" {
		if err := jsutil.CheckContextName(g.Context); err != nil {
			return jsutil.Errorf(jsutil.ErrBadInput, "--context: %w", err)
		}
	}
	return nil
}

// shortQuote quotes a value for an error message, cut after 40 bytes with
// its length, so a 10 KB value does not fill the terminal.
func shortQuote(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// oldAcksBucketFlag is the spelling --acks-bucket, kept hidden for one
// release after the ack-record bucket became --bucket on every command.
type oldAcksBucketFlag struct {
	OldAcksBucket string `name:"acks-bucket" hidden:"" placeholder:"NAME" help:"Deprecated spelling of --bucket."`
}

// oldAcksScopeFlag is the spelling --acks-scope, kept hidden for one release
// after the ack-record scope became --scope on every command.
type oldAcksScopeFlag struct {
	OldAcksScope string `name:"acks-scope" hidden:"" placeholder:"NAME" help:"Deprecated spelling of --scope."`
}

// deprecatedFlag returns the value an old spelling gave (with a note on
// stderr naming the new one), else cur.
func deprecatedFlag(env *Env, old, name, val, cur string) string {
	if val == "" {
		return cur
	}
	fmt.Fprintf(env.Stderr, "jsctl: note: %s is deprecated and will be removed; use %s\n", old, name)
	return val
}
