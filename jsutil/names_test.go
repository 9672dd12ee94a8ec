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
		"a.b":                    "white space",
		"a*":                     "white space",
		"a/b":                    "white space",
		`a\b`:                    "white space",
		"a b":                    "white space",
		"a\u00a0b":               "white space",
		"a\x1bb":                 "control characters",
		"a\x7f":                  "control characters",
		"a\u0085b":               "white space",
		"a\u0090b":               "control characters",
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
