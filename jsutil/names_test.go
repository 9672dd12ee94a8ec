package jsutil

import (
	"slices"
	"strings"
	"testing"
)

func TestNameProblem(t *testing.T) {
	for name, want := range map[string]string{
		"ORDERS":                 "",
		"billing-v2_ü":           "",
		strings.Repeat("a", 255): "",
		"":                       "it is empty",
		strings.Repeat("a", 256): "it is longer than 255 bytes",
		"a.b":                    "'.'",
		"a*":                     "'.'",
		"a/b":                    "'.'",
		`a\b`:                    "'.'",
		"a b":                    "spaces",
		"a\tb":                   "spaces",
		"a\nb":                   "spaces",
		"a\fb":                   "spaces",
		// The server accepts these (isValidAssetName), so jsctl does.
		"a\u00a0b": "",
		"a\x1bb":   "",
		"a\x7f":    "",
		"a\u0085b": "",
		"a\x01b":   "",
		"a\vb":     "",
	} {
		got := NameProblem(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("NameProblem(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestUnique(t *testing.T) {
	if got := Unique([]string{"b", "a", "b", "c", "a"}); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("Unique = %q", got)
	}
}
