package acks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A KeySpec says where a message's dedup key comes from:
//
//	header:NAME   the value of header NAME (case-sensitive, as NATS headers are)
//	json:PATH     a field of a JSON payload: a dotted path with array indexes,
//	              such as order.id, items[0].sku or [2] (a top-level array);
//	              a part that is a number also indexes an array (items.0.sku)
//	subject:N     the Nth token of the subject, counted from 1 (as in NATS
//	              subject mappings)
//	subject       the whole subject
//	seq           the stream sequence
//
// Several specs make one key of several parts (WithKey). A message that
// lacks a part (no such header or an empty one, a payload that is not JSON
// or has no such field, a JSON null or empty string, a subject with fewer
// tokens) is keyed by its stream sequence, or fails for good with
// WithKeyRequired. A JSON object or array is no key either (the reason says
// so).
//
// A JSON string gives its text, a number its literal as written (not
// normalised: 12.50 and 12.5 are two keys), true and false their names; a
// number or boolean makes the same key as a string of the same text.
type KeySpec struct {
	kind  KeyKind
	name  string // the header name, or the JSON path as written
	path  []pathStep
	token int // subject:N; 0 for the whole subject
}

type pathStep struct {
	key     string
	index   int
	isIndex bool // [N]: only an array index
}

// ParseKeySpec reads a key spec (see KeySpec).
func ParseKeySpec(s string) (KeySpec, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	bad := func(why string) (KeySpec, error) {
		return KeySpec{}, jsutil.Errorf(jsutil.ErrBadInput, "key spec %q: %s", s, why)
	}
	switch {
	case kind == "seq" && !hasArg:
		return KeySpec{kind: KeyFromSequence}, nil
	case kind == "subject" && !hasArg:
		return KeySpec{kind: KeyFromSubject}, nil
	case kind == "subject":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return bad("want subject:N with N a token number from 1, or subject for the whole subject")
		}
		return KeySpec{kind: KeyFromSubject, token: n}, nil
	case kind == "header":
		if arg == "" || strings.ContainsAny(arg, ": \t\r\n") {
			return bad("want header:NAME with a header name (no spaces or colons)")
		}
		return KeySpec{kind: KeyFromHeader, name: arg}, nil
	case kind == "json":
		path, err := parseJSONPath(arg)
		if err != nil {
			return bad(err.Error())
		}
		return KeySpec{kind: KeyFromJSON, name: arg, path: path}, nil
	}
	return bad("use header:NAME, json:PATH, subject:N, subject or seq")
}

// HeaderKey is the spec header:name.
func HeaderKey(name string) KeySpec { return KeySpec{kind: KeyFromHeader, name: name} }

// String is the spec as ParseKeySpec reads it.
func (k KeySpec) String() string {
	switch k.kind {
	case KeyFromHeader:
		return "header:" + k.name
	case KeyFromJSON:
		return "json:" + k.name
	case KeyFromSubject:
		if k.token == 0 {
			return "subject"
		}
		return "subject:" + strconv.Itoa(k.token)
	case KeyFromSequence:
		return "seq"
	}
	return ""
}

// parseJSONPath reads a dotted path with array indexes.
func parseJSONPath(p string) ([]pathStep, error) {
	if p == "" {
		return nil, fmt.Errorf("want json:PATH with a path such as order.id or items[0].sku")
	}
	var steps []pathStep
	for i, seg := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if rest != "" || strings.HasSuffix(seg, "[") {
			rest = "[" + rest
		}
		if name == "" && (rest == "" || i > 0) {
			return nil, fmt.Errorf("empty part in path %q", p)
		}
		if name != "" {
			steps = append(steps, pathStep{key: name})
		}
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("bad array index in %q (want name[N])", seg)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad array index %q in %q (want a number from 0)", rest[1:end], seg)
			}
			steps = append(steps, pathStep{index: n, isIndex: true})
			rest = rest[end+1:]
		}
	}
	return steps, nil
}

// KeyFunc derives a message's dedup key (WithKeyFunc). An empty key or an
// error means the message has none: it is keyed by its stream sequence,
// or fails for good with WithKeyRequired (the error is the reason).
type KeyFunc func(msg jetstream.Msg) (string, error)

// keyOf is a message's dedup key as the options derive it.
type keyOf struct {
	kind KeyKind
	key  string
	spec string
	// missing says why the message has no key (it is then keyed by its
	// stream sequence).
	missing string
}

// deriveKey derives the dedup key of message seq on subject.
func (c *processConfig) deriveKey(msg jetstream.Msg, subject string, seq uint64) keyOf {
	bySeq := keyOf{kind: KeyFromSequence, key: strconv.FormatUint(seq, 10), spec: "seq"}
	if c.keyFunc != nil {
		k, err := c.keyFunc(msg)
		switch {
		case err != nil:
			bySeq.missing = fmt.Sprintf("key function %s: %v", c.keyFuncName, err)
		case k == "":
			bySeq.missing = fmt.Sprintf("key function %s gave no key", c.keyFuncName)
		default:
			return keyOf{kind: KeyFromFunc, key: k, spec: c.keyFuncName}
		}
		return bySeq
	}
	var hdr nats.Header
	var data []byte
	if msg != nil {
		hdr, data = msg.Headers(), msg.Data()
	}
	if len(c.keys) == 1 && c.keys[0].kind == KeyFromHeader && c.keySpec != "" {
		if v := hdr.Get(c.keys[0].name); v != "" {
			return keyOf{kind: KeyFromHeader, key: v, spec: c.keySpec}
		}
	}
	parts, missing := keyParts(c.keys, subject, hdr, data, seq)
	if missing != "" {
		bySeq.missing = missing
		return bySeq
	}
	spec := c.keySpec
	if spec == "" { // not checked (tests)
		specs := make([]string, len(c.keys))
		for i, k := range c.keys {
			specs[i] = k.String()
		}
		spec = strings.Join(specs, " + ")
	}
	if len(c.keys) == 1 {
		return keyOf{kind: c.keys[0].kind, key: parts[0], spec: spec}
	}
	return keyOf{kind: KeyFromParts, key: JoinKeyParts(parts), spec: spec}
}

// keyParts extracts each spec's part of a key; missing says which part a
// message lacks.
func keyParts(specs []KeySpec, subject string, hdr nats.Header, data []byte, seq uint64) ([]string, string) {
	parts := make([]string, 0, len(specs))
	var doc any
	var docErr error
	decoded := false
	for _, k := range specs {
		var v string
		switch k.kind {
		case KeyFromSequence:
			v = strconv.FormatUint(seq, 10)
		case KeyFromHeader:
			if v = hdr.Get(k.name); v == "" {
				return nil, "no header " + k.name
			}
		case KeyFromSubject:
			v = subject
			if k.token > 0 {
				toks := strings.Split(subject, ".")
				if k.token > len(toks) {
					return nil, fmt.Sprintf("subject %q has %d tokens, not %d", subject, len(toks), k.token)
				}
				v = toks[k.token-1]
			}
		case KeyFromJSON:
			if !decoded {
				doc, docErr = decodeJSON(data)
				decoded = true
			}
			if docErr != nil {
				return nil, "the payload is not JSON"
			}
			var why string
			if v, why = jsonField(doc, k.path); why != "" {
				return nil, fmt.Sprintf(why, k.name)
			}
		}
		parts = append(parts, v)
	}
	return parts, ""
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// jsonField finds path in doc and gives its key text, or why it has none
// (a format with one %s, the path): no such field, null, an empty string,
// or an object or array (which cannot be keys: two payloads that write one
// differently would be different keys, and a key would be as large as the
// payload).
func jsonField(doc any, path []pathStep) (string, string) {
	const missing = "no JSON field %s"
	v := doc
	for _, st := range path {
		switch x := v.(type) {
		case map[string]any:
			if st.isIndex {
				return "", missing
			}
			var ok bool
			if v, ok = x[st.key]; !ok {
				return "", missing
			}
		case []any:
			i := st.index
			if !st.isIndex {
				n, err := strconv.Atoi(st.key)
				if err != nil || n < 0 {
					return "", missing
				}
				i = n
			}
			if i >= len(x) {
				return "", missing
			}
			v = x[i]
		default:
			return "", missing
		}
	}
	switch x := v.(type) {
	case nil:
		return "", "JSON field %s is null"
	case string:
		if x == "" {
			return "", "JSON field %s is an empty string"
		}
		return x, ""
	case json.Number:
		return x.String(), ""
	case bool:
		return strconv.FormatBool(x), ""
	case map[string]any:
		return "", "JSON field %s is an object: a key must be a string, number or boolean"
	}
	return "", "JSON field %s is an array: a key must be a string, number or boolean"
}

// JoinKeyParts joins the parts of a key made by several specs: with '|'
// between parts, and '\' and '|' inside a part escaped with a '\', so no
// two lists of parts join to the same key.
func JoinKeyParts(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('|')
		}
		for j := 0; j < len(p); j++ {
			if p[j] == '\\' || p[j] == '|' {
				b.WriteByte('\\')
			}
			b.WriteByte(p[j])
		}
	}
	return b.String()
}

// SplitKeyParts reverses JoinKeyParts.
func SplitKeyParts(key string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch {
		case key[i] == '\\' && i+1 < len(key):
			i++
			b.WriteByte(key[i])
		case key[i] == '|':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(key[i])
		}
	}
	return append(parts, b.String())
}
