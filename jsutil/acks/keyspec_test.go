package acks

import (
	"errors"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testMsg(subject string, data string, hdr ...string) jetstream.Msg {
	h := nats.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &storedMsg{raw: &jetstream.RawStreamMsg{Subject: subject, Header: h, Data: []byte(data), Sequence: 42}}
}

func specs(t *testing.T, ss ...string) []KeySpec {
	t.Helper()
	var out []KeySpec
	for _, s := range ss {
		k, err := ParseKeySpec(s)
		if err != nil {
			t.Fatalf("ParseKeySpec(%q): %v", s, err)
		}
		if k.String() != s {
			t.Errorf("ParseKeySpec(%q).String() = %q", s, k.String())
		}
		out = append(out, k)
	}
	return out
}

func TestParseKeySpecRefusesBadSpecs(t *testing.T) {
	for _, s := range []string{"", "header", "header:", "header:a b", "json:", "json:a..b", "json:a[", "json:a[x]", "json:a[-1]",
		"json:.a", "subject:0", "subject:x", "seq:1", "msgid", "Header:X"} {
		_, err := ParseKeySpec(s)
		if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), "key spec") {
			t.Errorf("ParseKeySpec(%q) = %v, want a bad-input error naming the spec", s, err)
		}
	}
}

func TestDeriveKey(t *testing.T) {
	order := `{"order":{"id":"A-1","total":12.50,"paid":true,"none":null,"empty":"","zero":0,"items":[{"sku":"x"},{"sku":"y","n":[1,2]}],"meta":{"b":1,"a":"z"}}}`
	cases := []struct {
		name       string
		specs      []string
		subject    string
		data       string
		hdr        []string
		kind       KeyKind
		key, spec  string
		missingHas string
	}{
		{"default header", []string{"header:Nats-Msg-Id"}, "orders.eu", order, []string{"Nats-Msg-Id", "m-1"}, KeyFromHeader, "m-1", "header:Nats-Msg-Id", ""},
		{"missing header", []string{"header:Order-Id"}, "orders.eu", order, nil, KeyFromSequence, "42", "seq", "no header Order-Id"},
		{"nested field", []string{"json:order.id"}, "orders.eu", order, nil, KeyFromJSON, "A-1", "json:order.id", ""},
		{"array index", []string{"json:order.items[1].sku"}, "o", order, nil, KeyFromJSON, "y", "json:order.items[1].sku", ""},
		{"index as a part", []string{"json:order.items.1.n[0]"}, "o", order, nil, KeyFromJSON, "1", "json:order.items.1.n[0]", ""},
		{"top-level array", []string{"json:[1].id"}, "o", `[{"id":1},{"id":"two"}]`, nil, KeyFromJSON, "two", "json:[1].id", ""},
		{"number as written", []string{"json:order.total"}, "o", order, nil, KeyFromJSON, "12.50", "json:order.total", ""},
		{"bool", []string{"json:order.paid"}, "o", order, nil, KeyFromJSON, "true", "json:order.paid", ""},
		{"number zero", []string{"json:order.zero"}, "o", order, nil, KeyFromJSON, "0", "json:order.zero", ""},
		{"object is refused", []string{"json:order.meta"}, "o", order, nil, KeyFromSequence, "42", "seq", "JSON field order.meta is an object: a key must be a string, number or boolean"},
		{"array is refused", []string{"json:order.items"}, "o", order, nil, KeyFromSequence, "42", "seq", "JSON field order.items is an array: a key must be a string, number or boolean"},
		{"null is missing", []string{"json:order.none"}, "o", order, nil, KeyFromSequence, "42", "seq", "JSON field order.none is null"},
		{"empty string is missing", []string{"json:order.empty"}, "o", order, nil, KeyFromSequence, "42", "seq", "JSON field order.empty is an empty string"},
		{"empty part of a joined key", []string{"subject:2", "json:order.empty"}, "orders.eu", order, nil, KeyFromSequence, "42", "seq", "JSON field order.empty is an empty string"},
		{"empty header is missing", []string{"header:Order-Id"}, "o", order, []string{"Order-Id", ""}, KeyFromSequence, "42", "seq", "no header Order-Id"},
		{"missing field", []string{"json:order.customer.id"}, "o", order, nil, KeyFromSequence, "42", "seq", "no JSON field order.customer.id"},
		{"index past the end", []string{"json:order.items[2].sku"}, "o", order, nil, KeyFromSequence, "42", "seq", "no JSON field"},
		{"index into an object", []string{"json:order[0]"}, "o", order, nil, KeyFromSequence, "42", "seq", "no JSON field"},
		{"not JSON", []string{"json:id"}, "o", "id=7", nil, KeyFromSequence, "42", "seq", "not JSON"},
		{"two JSON values", []string{"json:id"}, "o", `{"id":1} {"id":2}`, nil, KeyFromSequence, "42", "seq", "not JSON"},
		{"subject token", []string{"subject:2"}, "orders.eu.new", "", nil, KeyFromSubject, "eu", "subject:2", ""},
		{"last subject token", []string{"subject:3"}, "orders.eu.new", "", nil, KeyFromSubject, "new", "subject:3", ""},
		{"token past the end", []string{"subject:4"}, "orders.eu.new", "", nil, KeyFromSequence, "42", "seq", "has 3 tokens, not 4"},
		{"whole subject", []string{"subject"}, "orders.eu.new", "", nil, KeyFromSubject, "orders.eu.new", "subject", ""},
		{"sequence", []string{"seq"}, "o", "", nil, KeyFromSequence, "42", "seq", ""},
		{"joined", []string{"subject:2", "json:order.id"}, "orders.eu", order, nil, KeyFromParts, "eu|A-1", "subject:2 + json:order.id", ""},
		{"joined with seq", []string{"header:Tenant", "seq"}, "o", "", []string{"Tenant", "a|b\\c"}, KeyFromParts, `a\|b\\c|42`, "header:Tenant + seq", ""},
		{"joined, one part missing", []string{"subject:2", "json:order.id"}, "orders.eu", "x", nil, KeyFromSequence, "42", "seq", "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := processConfig{keys: specs(t, tc.specs...)}
			k := c.deriveKey(testMsg(tc.subject, tc.data, tc.hdr...), tc.subject, 42)
			if k.kind != tc.kind || k.key != tc.key || k.spec != tc.spec {
				t.Errorf("key = %s %q from %q, want %s %q from %q", k.kind, k.key, k.spec, tc.kind, tc.key, tc.spec)
			}
			if tc.missingHas == "" && k.missing != "" || tc.missingHas != "" && !strings.Contains(k.missing, tc.missingHas) {
				t.Errorf("missing = %q, want it to say %q", k.missing, tc.missingHas)
			}
		})
	}
}

func TestKeyFunc(t *testing.T) {
	c := processConfig{keyFunc: func(m jetstream.Msg) (string, error) {
		if len(m.Data()) == 0 {
			return "", errors.New("empty payload")
		}
		return strings.ToUpper(string(m.Data())), nil
	}, keyFuncName: "upper"}
	if k := c.deriveKey(testMsg("o", "abc"), "o", 42); k.kind != KeyFromFunc || k.key != "ABC" || k.spec != "upper" {
		t.Errorf("key = %+v", k)
	}
	if k := c.deriveKey(testMsg("o", ""), "o", 42); k.kind != KeyFromSequence || !strings.Contains(k.missing, "key function upper: empty payload") {
		t.Errorf("no key = %+v", k)
	}
}

// Joined parts never collide, and every kind of key has its own record
// key; header and sequence keys are the ones earlier versions wrote.
func TestKeysAreUnambiguous(t *testing.T) {
	lists := [][]string{{"a|b", "c"}, {"a", "b|c"}, {"a\\", "|c"}, {"a\\|", "c"}, {"a", "b", "c"}, {"", "a"}, {"a", ""}, {"a|b|c"}}
	seen := map[string][]string{}
	for _, l := range lists {
		j := JoinKeyParts(l)
		if prev, ok := seen[j]; ok {
			t.Errorf("%q and %q join to the same key %q", prev, l, j)
		}
		seen[j] = l
		if back := SplitKeyParts(j); strings.Join(back, "\x00") != strings.Join(l, "\x00") {
			t.Errorf("SplitKeyParts(%q) = %q, want %q", j, back, l)
		}
	}
	if got := dedupToken(KeyFromHeader, "order-1"); got != "horder-1" {
		t.Errorf("header token = %q, want the earlier versions' horder-1", got)
	}
	if got := dedupToken(KeyFromSequence, "42"); got != "s42" {
		t.Errorf("sequence token = %q", got)
	}
	long := strings.Repeat("x", 300)
	if got := dedupToken(KeyFromHeader, long); len(got) != 65 || got[0] != 'g' {
		t.Errorf("long header token = %q, want g + 64 hex digits as before", got)
	}
	toks := map[string]KeyKind{}
	for _, kind := range append([]KeyKind{KeyFromSequence}, KeyKinds...) {
		for _, key := range []string{"7", long} {
			if kind == KeyFromSequence && key == long {
				continue
			}
			tok := dedupToken(kind, key)
			if prev, ok := toks[tok]; ok {
				t.Errorf("%s and %s keys %q share the token %q", prev, kind, key, tok)
			}
			toks[tok] = kind
			gotKind, gotKey, ok := parseDedupToken(tok)
			wantKey := key
			if hashedKey(kind, key) {
				wantKey = "" // kept in the record's value
			}
			if !ok || gotKind != kind || gotKey != wantKey {
				t.Errorf("parseDedupToken(%q) = %s %q %v, want %s %q", tok, gotKind, gotKey, ok, kind, wantKey)
			}
		}
	}
}
