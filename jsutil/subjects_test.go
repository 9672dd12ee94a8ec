package jsutil

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckSubjectFilter(t *testing.T) {
	for _, ok := range []string{"orders", "orders.eu", "orders.*", "orders.*.eu", "orders.>", ">", "*", "orders.eu*", "a\x01b", strings.Repeat("A", 10000)} {
		if err := CheckSubjectFilter("filter", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"orders..eu":  "empty token",
		".orders":     "empty token",
		"orders.":     "empty token",
		"orders.>.eu": `">" may only be the last token`,
		">.eu":        `">" may only be the last token`,
		"orders eu":   "white space",
		"orders.\teu": "white space",
	} {
		err := CheckSubjectFilter("--subject", bad)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--subject") {
			t.Errorf("%q: got %v, want a bad-input error saying %q", bad, err, why)
		}
	}
}
