package commands

import (
	"fmt"

	"github.com/jsctl/jsctl/jsutil/reset"
)

// warnSkipped tells people, on stderr, about records in jsctl's buckets
// that could not be used and were skipped (with --json too: stderr does not
// disturb the document, which has them in a "skipped_records" field where
// it has room for one).
func warnSkipped(env *Env, list []reset.BadRecord) {
	for _, b := range list {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", b)
	}
}
