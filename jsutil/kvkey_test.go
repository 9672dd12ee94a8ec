package jsutil

import (
	"regexp"
	"testing"
)

var validKeyToken = regexp.MustCompile(`^[-_=A-Za-z0-9]+$`)

func TestKeyTokenRoundTrip(t *testing.T) {
	for _, s := range []string{"", "ORDERS", "a.b", "a b", "ünïcode", "=", "x=41", "*>", "a/b\\c", "\x00\xff"} {
		tok := KeyToken(s)
		if !validKeyToken.MatchString(tok) {
			t.Errorf("KeyToken(%q) = %q: not a valid key token", s, tok)
		}
		back, err := KeyTokenDecode(tok)
		if err != nil || back != s {
			t.Errorf("KeyTokenDecode(%q) = %q, %v; want %q", tok, back, err, s)
		}
	}
	for _, bad := range []string{"=4", "=G1", "ab="} {
		if _, err := KeyTokenDecode(bad); err == nil {
			t.Errorf("KeyTokenDecode(%q) accepted a bad token", bad)
		}
	}
}

func FuzzKeyToken(f *testing.F) {
	f.Add("ORDERS")
	f.Add("a.b=c")
	f.Fuzz(func(t *testing.T, s string) {
		tok := KeyToken(s)
		if !validKeyToken.MatchString(tok) {
			t.Fatalf("KeyToken(%q) = %q: not a valid key token", s, tok)
		}
		back, err := KeyTokenDecode(tok)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: got %q, %v", s, back, err)
		}
	})
}
