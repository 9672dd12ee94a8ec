package replica

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// plan says how target relates to origin.
type plan struct {
	mirror        bool
	mirrorFilters []string // origin-side subjects the mirror copies
	sources       []sourceRef
	reason        string // why neither (ByTime)
}

// sourceRef is one of target's sources that copies origin.
type sourceRef struct {
	iname   string   // the server's index name: "<name>[:hash] <filter> <destination>"
	filters []string // origin-side subjects it copies
	written []string // target-side filters covering the subjects it writes
}

// StreamSource header (nats-server server/stream.go JSStreamSource).
const sourceHeader = "Nats-Stream-Source"

// match works out whether target mirrors or sources origin.
func (t *translator) match(ctx context.Context) (*plan, error) {
	tc := t.tinfo.Config
	name := t.origin.Stream
	if m := tc.Mirror; m != nil {
		if m.Name != name {
			return &plan{reason: fmt.Sprintf("%q mirrors %q, not %q", t.target.Stream, m.Name, name)}, nil
		}
		if why, err := t.otherDomain(ctx, m.External); err != nil || why != "" {
			return &plan{reason: why}, err
		}
		return &plan{mirror: true, mirrorFilters: originFilters(m)}, nil
	}
	p := &plan{}
	var named int
	for i := range tc.Sources {
		s := tc.Sources[i]
		if s == nil || s.Name != name {
			continue
		}
		named++
		why, err := t.otherDomain(ctx, s.External)
		if err != nil {
			return nil, err
		}
		if why != "" {
			p.reason = why
			continue
		}
		p.sources = append(p.sources, sourceRef{iname: indexName(s), filters: originFilters(s), written: writtenFilters(s, t.originSubjects())})
	}
	if named == 0 {
		p.reason = fmt.Sprintf("%q neither mirrors nor sources %q, so its messages record no origin sequence", t.target.Stream, name)
	}
	return p, nil
}

// originSubjects are the origin's configured subjects (nil when unknown).
func (t *translator) originSubjects() []string {
	if t.oinfo == nil {
		return nil
	}
	return t.oinfo.Config.Subjects
}

// otherDomain says why a mirror or source with this external prefix copies
// a stream of another domain than origin's ("" when it may be origin's).
// Only prefixes of the form $JS.<domain>.API name a domain; domains are
// looked up only when needed (one account-info request per side).
func (t *translator) otherDomain(ctx context.Context, ext *jetstream.ExternalStream) (string, error) {
	if t.oinfo == nil {
		return "", nil // the origin cannot be asked
	}
	if ext == nil && t.sameAPI() {
		return "", nil // the same JetStream: a name names one stream
	}
	od, err := t.domain(ctx, t.origin, &t.odomain)
	if err != nil || od == nil {
		return "", err
	}
	if ext == nil {
		td, err := t.domain(ctx, t.target, &t.tdomain)
		if err != nil || td == nil || *td == *od {
			return "", err
		}
		return fmt.Sprintf("%q copies %q of its own domain %q, the origin is in domain %q", t.target.Stream, t.origin.Stream, *td, *od), nil
	}
	d, ok := prefixDomain(ext.APIPrefix)
	if !ok || d == *od {
		return "", nil
	}
	return fmt.Sprintf("%q copies %q of domain %q, the origin is in domain %q", t.target.Stream, t.origin.Stream, d, *od), nil
}

// sameAPI reports whether origin and target are asked on the same
// connection with the same API prefix (so they are in the same domain).
func (t *translator) sameAPI() bool {
	o, g := t.origin.JS, t.target.JS
	return o.Conn() == g.Conn() && jsutil.APIPrefix(o.Options()) == jsutil.APIPrefix(g.Options())
}

// domain returns a side's JetStream domain (nil when it cannot be read:
// then the domain check is skipped), asking the server once per side.
func (t *translator) domain(ctx context.Context, s Side, d *sideDomain) (*string, error) {
	if d.asked {
		return d.name, nil
	}
	d.asked = true
	t.extra++
	ai, err := s.JS.AccountInfo(ctx)
	if err != nil {
		return nil, ctx.Err()
	}
	name := ai.Domain
	d.name = &name
	return d.name, nil
}

// sideDomain is a side's domain once asked.
type sideDomain struct {
	asked bool
	name  *string
}

// prefixDomain returns the domain of an API prefix "$JS.<domain>.API".
func prefixDomain(prefix string) (string, bool) {
	p := strings.Split(strings.TrimSuffix(prefix, "."), ".")
	if len(p) == 3 && p[0] == "$JS" && p[2] == "API" {
		return p[1], true
	}
	return "", false
}

// originFilters returns the origin-side subjects a mirror or source copies.
func originFilters(s *jetstream.StreamSource) []string {
	if len(s.SubjectTransforms) > 0 {
		var out []string
		for _, tr := range s.SubjectTransforms {
			out = append(out, orAll(tr.Source))
		}
		return out
	}
	return []string{orAll(s.FilterSubject)}
}

func orAll(s string) string {
	if s == "" {
		return ">"
	}
	return s
}

// writtenFilters returns filters covering the target subjects a source
// writes: without a transform its filter, or else the origin's own
// subjects; with transforms their destinations with transform functions
// as wildcards; ">" when that cannot be said. The narrower they are, the
// fewer of other sources' messages a search steps over.
func writtenFilters(s *jetstream.StreamSource, originSubjects []string) []string {
	all := []string{">"}
	if len(s.SubjectTransforms) == 0 {
		switch {
		case s.FilterSubject != "" && s.FilterSubject != ">":
			return []string{s.FilterSubject}
		case len(originSubjects) > 0:
			return originSubjects
		}
		return all
	}
	var out []string
	for _, tr := range s.SubjectTransforms {
		if tr.Destination == "" {
			if tr.Source == "" || tr.Source == ">" {
				if len(originSubjects) == 0 {
					return all
				}
				out = append(out, originSubjects...)
				continue
			}
			out = append(out, tr.Source)
			continue
		}
		f, ok := destinationFilter(tr.Destination)
		if !ok {
			return all
		}
		out = append(out, f)
	}
	return out
}

// destinationFilter turns a transform destination into a filter matching
// every subject it produces (functions and $N references as "*").
func destinationFilter(dest string) (string, bool) {
	toks := strings.Split(dest, ".")
	for i, tok := range toks {
		low := strings.ToLower(tok)
		switch {
		case strings.Contains(low, "split") || strings.Contains(low, "slice"):
			return "", false // changes the number of tokens
		case strings.Contains(tok, "{{") || strings.HasPrefix(tok, "$"):
			toks[i] = "*"
		}
	}
	return strings.Join(toks, "."), true
}

// indexName is nats-server's StreamSource.composeIName.
func indexName(s *jetstream.StreamSource) string {
	name := s.Name
	if s.External != nil {
		name += ":" + serverHash(s.External.APIPrefix)
	}
	if s.Consumer != nil {
		name += ":C=" + serverHash(s.Consumer.Name)
	}
	src, dst := orAll(s.FilterSubject), ">"
	if len(s.SubjectTransforms) > 0 {
		var ss, ds []string
		for _, tr := range s.SubjectTransforms {
			ss = append(ss, orAll(tr.Source))
			ds = append(ds, orAll(tr.Destination))
		}
		src, dst = strings.Join(ss, "\f"), strings.Join(ds, "\f")
	}
	return name + " " + src + " " + dst
}

// serverHash is nats-server's getHash: 8 base-62 digits of a SHA-256.
func serverHash(s string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := sha256.Sum256([]byte(s))
	out := make([]byte, 8)
	for i := range out {
		out[i] = digits[int(b[i]%62)]
	}
	return string(out)
}

// origin is what a Nats-Stream-Source header says.
type origin struct {
	name  string // origin stream name (without hashes)
	iname string // index name; "" for the old reply-subject form
	seq   uint64
	ident string // the origin's stream identity (2.14+), "" for none
}

// parseSourceHeader reads a Nats-Stream-Source value (nats-server
// streamAndSeq): "<name> <seq> <filter> <destination> <subject> [<ident>]",
// the 2.9 form "<name> <seq>", or the 2.2 form, an ack reply subject
// "$JS.ACK.<stream>.<consumer>.<dc>.<sseq>..." (with domain and account
// hash tokens in the v2 form).
func parseSourceHeader(v string) (origin, bool) {
	if strings.HasPrefix(v, "$JS.ACK.") {
		tok := strings.Split(v, ".")
		off := 2
		switch {
		case len(tok) == 9:
		case len(tok) >= 12:
			off = 4
		default:
			return origin{}, false
		}
		seq, err := strconv.ParseUint(tok[off+3], 10, 64)
		return origin{name: tok[off], seq: seq}, err == nil
	}
	f := strings.Split(v, " ")
	if len(f) != 2 && len(f) < 4 {
		return origin{}, false
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return origin{}, false
	}
	o := origin{name: f[0], seq: seq}
	if i := strings.IndexByte(o.name, ':'); i >= 0 {
		o.name = o.name[:i]
	}
	if len(f) >= 4 {
		o.iname = f[0] + " " + f[2] + " " + f[3]
	}
	o.ident = jsutil.SourceIdentity(v)
	return o, true
}

// from reports whether a header comes from this source of stream name.
func (r sourceRef) from(o origin, name string) bool {
	if o.iname != "" {
		return o.iname == r.iname
	}
	return o.name == name
}
