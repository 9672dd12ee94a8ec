package trustmatrix

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/commands"
)

// repoFile reads a file of the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readers derives every command that reads recorded state: the "read by"
// column of docs/permissions.md's bucket table, every command whose
// measured row of the publish table reads a JSCTL_* bucket, and every
// command of the model with a --bucket flag (the ack-record bucket) or a
// flag or argument about a replica's origin (the Nats-Stream-Source header
// it reads). It fails when a name there is
// not a command of the model.
func readers(t *testing.T) map[string]string {
	t.Helper()
	model, err := commands.Commands()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range model {
		known[c.Path] = true
	}
	out := map[string]string{}
	add := func(path, why string) {
		if !known[path] {
			t.Errorf("docs/permissions.md names %q (%s), which is not a command of the model", path, why)
			return
		}
		if out[path] == "" {
			out[path] = why
		}
	}
	doc := repoFile(t, "docs/permissions.md")
	inBuckets := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| bucket |") {
			inBuckets = true
			continue
		}
		if inBuckets && !strings.HasPrefix(line, "|") {
			inBuckets = false
		}
		if inBuckets && strings.HasPrefix(line, "| `JSCTL_") {
			cols := strings.Split(line, "|")
			bucket := strings.Trim(strings.Fields(cols[1])[0], "`")
			for _, p := range expandNames(strings.Trim(strings.TrimSpace(cols[4]), "`")) {
				add(p, "reads "+bucket)
			}
		}
		if strings.HasPrefix(line, "| `jsctl ") {
			cols := strings.Split(line, "|")
			path := strings.TrimPrefix(strings.Trim(strings.TrimSpace(cols[1]), "`"), "jsctl ")
			if m := bucketRead.FindStringSubmatch(cols[2]); m != nil {
				add(path, "reads "+m[1]+m[2]+" (measured)")
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no bucket readers in docs/permissions.md")
	}
	for _, c := range model {
		for _, f := range c.Flags {
			if f.Name == "bucket" && !f.Positional {
				add(c.Path, "reads the ack-record bucket (--bucket)")
			}
			if replicaWords.MatchString(f.Help) {
				add(c.Path, "reads a replica's origin headers (--"+f.Name+")")
			}
		}
	}
	return out
}

var (
	// bucketRead is a read of a jsctl bucket in the measured publish
	// table, or of the records of jsctl's audit stream (JSCTL_AUDIT).
	bucketRead = regexp.MustCompile(`\$JS\.API\.(?:(?:STREAM\.INFO|STREAM\.MSG\.GET|DIRECT\.GET|CONSUMER\.CREATE)\.KV_(JSCTL_[A-Z_]+)|(?:STREAM\.MSG\.GET|DIRECT\.GET|CONSUMER\.CREATE)\.(JSCTL_AUDIT))`)
	// replicaWords: a flag about where a replica's messages came from.
	replicaWords = regexp.MustCompile(`(?i)\b(mirror|sourc(e|ed|ing))\b.*\b(origin|came from)|origin stream|\borigin\b.*\b(mirror|sourc)`)
)

// expandNames turns a cell like "`acks ls/get/stats`, `consumer reset`
// (records in range)" into command paths.
func expandNames(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(strings.Trim(strings.TrimSpace(part), "`"))
		if i := strings.IndexAny(part, "`("); i >= 0 {
			part = strings.TrimSpace(part[:i])
		}
		words := strings.Fields(part)
		var keep []string
		for _, w := range words {
			if strings.HasPrefix(w, "-") {
				break
			}
			keep = append(keep, w)
		}
		if len(keep) == 0 {
			continue
		}
		last := keep[len(keep)-1]
		prefix := strings.Join(keep[:len(keep)-1], " ")
		for _, alt := range strings.Split(last, "/") {
			out = append(out, strings.TrimSpace(prefix+" "+alt))
		}
	}
	return out
}

// TestMatrixCoversEveryReader fails when a command that reads a JSCTL_*
// bucket or a replica's headers has no row in the matrix, or a row names
// a command that is not one.
func TestMatrixCoversEveryReader(t *testing.T) {
	rd := readers(t)
	rows := map[string]bool{}
	for _, r := range matrix() {
		rows[r.command] = true
		if len(r.cells) != len(faults) {
			t.Errorf("row %q has %d cells, want one per fault (%d)", r.name, len(r.cells), len(faults))
		}
		for _, f := range faults {
			e, ok := r.cells[f]
			switch {
			case !ok:
				t.Errorf("row %q has no cell for %q", r.name, f)
			case e.kind == na && e.why == "":
				t.Errorf("row %q, %q: n/a without a reason", r.name, f)
			case e.kind != na && (r.record == nil || r.use == nil || (f == fHostile && r.hostile == nil)):
				t.Errorf("row %q, %q: a cell without a record, a use or a hostile record", r.name, f)
			}
		}
	}
	for p, why := range rd {
		t.Logf("reader: %s (%s)", p, why)
	}
	for _, m := range missingReaders(rd, rows) {
		t.Errorf("command %s is missing from the matrix (internal/trustmatrix, matrix())", m)
	}
	// The check fails for a command left out: without seek's row, seek
	// is missing.
	without := map[string]bool{}
	for p := range rows {
		without[p] = p != "seek"
	}
	if got := missingReaders(rd, without); len(got) != 1 || !strings.HasPrefix(got[0], "seek (") {
		t.Errorf("with seek's row left out, the check finds %v missing; want seek alone", got)
	}
	for p := range rows {
		if _, ok := rd[p]; !ok && rows[p] {
			t.Errorf("the matrix has a row for %q, which reads no recorded state that docs/permissions.md or the model shows", p)
		}
	}
}

// missingReaders lists the readers (command and why) that have no row
// (rows[command] true), sorted.
func missingReaders(readers map[string]string, rows map[string]bool) []string {
	var missing []string
	for p, why := range readers {
		if !rows[p] {
			missing = append(missing, p+" ("+why+")")
		}
	}
	sort.Strings(missing)
	return missing
}
