package commands

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
)

// completeServerBudget bounds everything a completion asks the server
// (connect and list), independent of --timeout: a shell must never wait
// long for a hint. completeBudgetEnv changes it, for a slow link.
const (
	completeServerBudget = 800 * time.Millisecond
	completeBudgetEnv    = "JSCTL_COMPLETE_TIMEOUT"
)

// completeBudget reads the value of completeBudgetEnv: a Go duration above
// zero; anything else (unset, unreadable) is the default. Completion never
// fails, so a bad value is not an error.
func completeBudget(v string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return completeServerBudget
	}
	return d
}

// defaultAcksBucket is the ack-record bucket whose scopes --scope offers
// when no --bucket is on the line.
const defaultAcksBucket = "JSCTL_ACKS"

// Predictor kinds: what a value (flag value or positional argument) is.
// See the "predictor" tag in completion.go.
const (
	predictStream   = "stream"
	predictConsumer = "consumer"
	predictScope    = "scope"
	predictSnapshot = "snapshot"
	// predictSnapshotConsumer: the consumers of the snapshot named on the
	// line (snapshot restore).
	predictSnapshotConsumer = "snapshot-consumer"
	predictTime             = "time"
	predictFile             = "file"
	predictDir              = "dir"
	predictContext          = "context"
	predictZone             = "zone"
	predictEnum             = "enum"
	predictNone             = "none"
)

// Directives tell the shell script what to do besides offering the
// candidates: nothing more, or complete file or directory names itself.
const (
	directiveValues = ":values"
	directiveFiles  = ":files"
	directiveDirs   = ":dirs"
)

// candidate is one completion: the whole word and a short description.
type candidate struct {
	Value string
	Desc  string
}

// given is a value already on the line, with what it was given for.
type given struct {
	v *kong.Value
	s string
}

// lineState is what the words before the cursor say: the command reached,
// the next positional, the values given and a flag waiting for its value.
type lineState struct {
	node     *kong.Node
	pos      int
	values   []given
	pending  *kong.Flag
	dashdash bool
	// lost is set by a word that is neither a command nor an argument:
	// nothing sensible follows it.
	lost bool
}

// walkLine follows words (without the program name) through the kong model
// the way kong's parser would, without applying anything.
func walkLine(app *kong.Application, words []string) *lineState {
	st := &lineState{node: app.Node}
	for _, w := range words {
		if st.pending != nil {
			st.values = append(st.values, given{st.pending.Value, w})
			st.pending = nil
			continue
		}
		if !st.dashdash && w == "--" {
			st.dashdash = true
			continue
		}
		if !st.dashdash && strings.HasPrefix(w, "--") {
			name, val, hasVal := strings.Cut(w[2:], "=")
			f, negated := findLongFlag(st.node, name)
			switch {
			case f == nil:
			case hasVal:
				st.values = append(st.values, given{f.Value, val})
			case negated || f.IsBool() || f.IsCounter():
				st.values = append(st.values, given{f.Value, ""})
			default:
				st.pending = f
			}
			continue
		}
		if !st.dashdash && len(w) > 1 && w[0] == '-' && findShortFlag(st.node, []rune(w[1:])[0]) != nil {
			for i, r := range w[1:] {
				f := findShortFlag(st.node, r)
				if f == nil {
					break
				}
				if f.IsBool() || f.IsCounter() {
					st.values = append(st.values, given{f.Value, ""})
					continue
				}
				if rest := w[1+i+len(string(r)):]; rest != "" {
					st.values = append(st.values, given{f.Value, rest})
				} else {
					st.pending = f
				}
				break
			}
			continue
		}
		st.positional(w)
	}
	return st
}

// positional takes one positional word: an argument of the current command,
// or the name of a subcommand.
func (st *lineState) positional(w string) {
	n := st.node
	if st.pos < len(n.Positional) {
		p := n.Positional[st.pos]
		st.values = append(st.values, given{p, w})
		if !p.IsCumulative() {
			st.pos++
		}
		return
	}
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && (c.Name == w || contains(c.Aliases, w)) {
			st.node, st.pos = c, 0
			return
		}
	}
	for _, c := range n.Children {
		if c.Type == kong.ArgumentNode && c.Argument != nil {
			st.values = append(st.values, given{c.Argument, w})
			st.node, st.pos = c, 0
			return
		}
	}
	st.lost = true
}

// flagsInScope are the flags of node and of its ancestors.
func flagsInScope(node *kong.Node) []*kong.Flag {
	var out []*kong.Flag
	for n := node; n != nil; n = n.Parent {
		out = append(out, n.Flags...)
	}
	return out
}

func findLongFlag(node *kong.Node, name string) (f *kong.Flag, negated bool) {
	for _, f := range flagsInScope(node) {
		if f.Name == name || contains(f.Aliases, name) {
			return f, false
		}
		if neg := negationOf(f); neg != "" && neg == "--"+name {
			return f, true
		}
	}
	return nil, false
}

func findShortFlag(node *kong.Node, r rune) *kong.Flag {
	for _, f := range flagsInScope(node) {
		if f.Short == r || contains(f.Aliases, string(r)) {
			return f
		}
	}
	return nil
}

// negationOf is the --no-NAME (or custom) form of a negatable flag, or "".
func negationOf(f *kong.Flag) string {
	switch f.Tag.Negatable {
	case "":
		return ""
	case "_":
		return "--no-" + f.Name
	default:
		return "--" + f.Tag.Negatable
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// predictorOf says what kind of value v is: its "predictor" tag, its enum,
// or, for commands that do not tag, its name, placeholder or type.
func predictorOf(v *kong.Value) string {
	if p := v.Tag.Get("predictor"); p != "" {
		return p
	}
	if v.Enum != "" {
		return predictEnum
	}
	if v.Flag != nil && (v.IsBool() || v.IsCounter()) {
		return predictNone
	}
	placeholder := v.Tag.PlaceHolder
	if v.Flag != nil && v.Flag.PlaceHolder != "" {
		placeholder = v.Flag.PlaceHolder
	}
	for _, n := range []string{v.Name, placeholder} {
		switch strings.TrimSuffix(strings.ToLower(n), "s") {
		case "stream":
			return predictStream
		case "consumer", "durable":
			return predictConsumer
		case "scope":
			return predictScope
		case "time", "to-time", "from-time", "start-time", "end-time", "since", "until", "target-time":
			return predictTime
		case "context":
			return predictContext
		case "tz", "zone":
			return predictZone
		}
	}
	switch {
	case v.Tag.Type == "existingdir" || strings.EqualFold(placeholder, "DIR"):
		return predictDir
	case v.Tag.Type == "path" || v.Tag.Type == "existingfile" || v.Tag.Type == "filecontent" ||
		strings.EqualFold(placeholder, "FILE"):
		return predictFile
	}
	return predictNone
}

// completer computes candidates for the word under the cursor.
type completer struct {
	app *kong.Application
	env *Env
	ctx context.Context
	// cancel ends the server budget; client is the connection opened for
	// it (nil until needed, and after a failure).
	cancel   context.CancelFunc
	client   *jsutil.Client
	tried    bool
	serverCx context.Context
	// budget bounds the server lookups (completeServerBudget when zero).
	budget time.Duration
}

// serverBudget is how long the server lookups may take in all.
func (c *completer) serverBudget() time.Duration {
	if c.budget > 0 {
		return c.budget
	}
	return completeServerBudget
}

// close releases the connection, if one was opened.
func (c *completer) close() {
	if c.client != nil {
		c.client.Close()
	}
	if c.cancel != nil {
		c.cancel()
	}
}

// complete returns the candidates for cur after words, and a directive.
func (c *completer) complete(words []string, cur string) ([]candidate, string) {
	st := walkLine(c.app, words)
	if st.lost {
		return nil, directiveValues
	}
	c.applyGlobals(st)
	if st.pending != nil {
		return c.values(st, st.pending.Value, cur, "")
	}
	if !st.dashdash && strings.HasPrefix(cur, "-") {
		if strings.HasPrefix(cur, "--") {
			if name, val, ok := strings.Cut(cur[2:], "="); ok {
				f, negated := findLongFlag(st.node, name)
				if f == nil || negated || f.IsBool() || f.IsCounter() {
					return nil, directiveValues
				}
				// For :files and :dirs the scripts complete the path after '='.
				return c.values(st, f.Value, val, "--"+name+"=")
			}
		}
		out := filterPrefix(flagCandidates(st), cur)
		if n := st.node; !strings.HasPrefix(cur, "--") && st.pos < len(n.Positional) && predictorOf(n.Positional[st.pos]) == predictTime {
			// A relative time such as -15m looks like a short flag.
			times, _ := c.values(st, n.Positional[st.pos], cur, "")
			out = append(times, out...)
		}
		return out, directiveValues
	}
	n := st.node
	if st.pos < len(n.Positional) {
		return c.values(st, n.Positional[st.pos], cur, "")
	}
	var out []candidate
	for _, ch := range n.Children {
		switch {
		case ch.Type == kong.CommandNode && !ch.Hidden:
			out = append(out, candidate{ch.Name, firstLine(ch.Help)})
		case ch.Type == kong.ArgumentNode && ch.Argument != nil:
			return c.values(st, ch.Argument, cur, "")
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	if len(n.Children) == 0 {
		// Nothing positional is left: offer the flags.
		out = flagCandidates(st)
	}
	return filterPrefix(out, cur), directiveValues
}

// flagCandidates lists the visible flags in scope, leaving out those already
// given once unless they may repeat.
func flagCandidates(st *lineState) []candidate {
	used := map[*kong.Value]bool{}
	for _, g := range st.values {
		used[g.v] = true
	}
	var out []candidate
	for _, f := range flagsInScope(st.node) {
		if f.Hidden || (used[f.Value] && !f.IsCumulative() && !f.IsCounter()) {
			continue
		}
		out = append(out, candidate{"--" + f.Name, firstLine(f.Help)})
		if neg := negationOf(f); neg != "" {
			out = append(out, candidate{neg, firstLine(f.Help)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// values returns the candidates for value v, each prefixed with prefix (the
// "--flag=" of an attached value), filtered by cur.
func (c *completer) values(st *lineState, v *kong.Value, cur, prefix string) ([]candidate, string) {
	var out []candidate
	switch predictorOf(v) {
	case predictEnum:
		for _, e := range v.EnumSlice() {
			out = append(out, candidate{Value: e})
		}
	case predictStream:
		for _, name := range c.streams() {
			// Like "nats stream ls", leave out the streams behind KV
			// buckets and object stores, and jsctl's own (JSCTL_AUDIT),
			// unless asked for by prefix (as --streams does).
			if (strings.HasPrefix(name, "KV_") || strings.HasPrefix(name, "OBJ_") || strings.HasPrefix(name, "JSCTL_")) && !strings.HasPrefix(cur, name[:strings.IndexByte(name, '_')+1]) {
				continue
			}
			out = append(out, candidate{name, "stream"})
		}
	case predictConsumer:
		if s := firstOfKind(st, predictStream); s != "" {
			out = namesOf(c.consumers(s), "consumer of "+s)
		}
	case predictScope:
		bucket := acksBucket(st)
		out = namesOf(c.scopes(bucket), "scope in "+bucket)
	case predictSnapshot:
		out = namesOf(c.snapshots(), "snapshot")
	case predictSnapshotConsumer:
		if name := firstOfKind(st, predictSnapshot); name != "" {
			out = namesOf(c.snapshotConsumers(name), "consumer in snapshot "+name)
		}
	case predictTime:
		out = c.timeCandidates()
	case predictContext:
		names, _ := jsutil.ListNATSContexts()
		out = namesOf(names, "nats context")
	case predictZone:
		out = []candidate{{"UTC", "Coordinated Universal Time"}, {"Local", "this machine's zone"}}
	case predictFile:
		return nil, directiveFiles
	case predictDir:
		return nil, directiveDirs
	}
	if v.IsCumulative() {
		out = withoutGiven(out, st, v)
	}
	for i := range out {
		out[i].Value = prefix + out[i].Value
	}
	return filterPrefix(out, prefix+cur), directiveValues
}

// applyGlobals copies the global flags given on the line (--server,
// --context, --tz, ...) into env.Globals, so lookups use the same server
// as the command would. Values that do not parse are ignored.
func (c *completer) applyGlobals(st *lineState) {
	for _, g := range st.values {
		f := g.v.Flag
		if f == nil || f.IsBool() || f.IsCounter() || !contains(rootFlagNames(c.app), f.Name) {
			continue
		}
		_ = g.v.Parse(kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: g.s}), g.v.Target)
	}
}

func rootFlagNames(app *kong.Application) []string {
	var out []string
	for _, f := range app.Flags {
		out = append(out, f.Name)
	}
	return out
}

func firstOfKind(st *lineState, kind string) string {
	for _, g := range st.values {
		if g.s != "" && predictorOf(g.v) == kind {
			return g.s
		}
	}
	return ""
}

// acksBucket is the ack-record bucket the line names: the value of a flag
// called --bucket or --*-bucket (e.g. --acks-bucket), else that flag's
// default, else JSCTL_ACKS.
func acksBucket(st *lineState) string {
	isBucket := func(f *kong.Flag) bool { return f.Name == "bucket" || strings.HasSuffix(f.Name, "-bucket") }
	for _, g := range st.values {
		if g.v.Flag != nil && isBucket(g.v.Flag) && g.s != "" {
			return g.s
		}
	}
	for _, f := range flagsInScope(st.node) {
		if isBucket(f) && f.HasDefault && f.Default != "" {
			return f.Default
		}
	}
	return defaultAcksBucket
}

func withoutGiven(in []candidate, st *lineState, v *kong.Value) []candidate {
	var out []candidate
	for _, cand := range in {
		dup := false
		for _, g := range st.values {
			if g.v == v && g.s == cand.Value {
				dup = true
			}
		}
		if !dup {
			out = append(out, cand)
		}
	}
	return out
}

func namesOf(names []string, desc string) []candidate {
	out := make([]candidate, 0, len(names))
	for _, n := range names {
		out = append(out, candidate{n, desc})
	}
	return out
}

func filterPrefix(in []candidate, prefix string) []candidate {
	var out []candidate
	for _, cand := range in {
		if strings.HasPrefix(cand.Value, prefix) {
			out = append(out, cand)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
