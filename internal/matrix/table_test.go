package matrix

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/internal/natsproc"
)

// versionsTest are the nats-server versions the matrix runs besides the
// pinned one (go.mod's, the newest row): the oldest release jsctl supports
// and the newest patch of each minor release since (there is no 2.13).
var versionsTest = []string{"v2.10.27", "v2.11.17", "v2.12.15", "v2.14.10"}

// update makes TestReadmeMatrixCurrent rewrite docs/server-versions.md's table.
var update = flag.Bool("update", false, "rewrite docs/server-versions.md's server version table")

// pinnedMinor is the minor release of the pinned version.
const pinnedMinor = "2.15"

// cell is the expected outcome of a scenario on a minor release and how
// the README says it.
type cell struct {
	outcome outcome
	// exit and says: for unsupported, jsctl's exit code and a part of
	// its error message.
	exit int
	says string
	// text is the README's cell.
	text string
}

// row is one scenario's expectations, by minor release.
type row struct {
	scenario string
	cells    map[string]cell
}

// since is cell a on minors before from and b from it on.
func since(from string, a, b cell) map[string]cell {
	m := map[string]cell{}
	for _, minor := range minors() {
		if minorLess(minor, from) {
			m[minor] = a
		} else {
			m[minor] = b
		}
	}
	return m
}

// everywhere is c on every minor.
func everywhere(c cell) map[string]cell { return since("0.0", c, c) }

// expectations is the matrix: what each scenario does on each minor
// release. The README's table is rendered from it.
var expectations = []row{
	{"seek", since("2.11",
		cell{outcome: fallback, text: "client-side binary search"},
		cell{outcome: pass, text: "server time index"})},
	{"reset", since("2.14",
		cell{outcome: fallback, text: "recreate"},
		cell{outcome: pass, text: "in place"})},
	{"recreate", everywhere(cell{outcome: pass, text: "recreate"})},
	{"pause", since("2.11",
		cell{outcome: unsupported, exit: 2, says: "has no consumer pause API (needs nats-server 2.11 or later)", text: "exit 2"},
		cell{outcome: pass, text: "pause API"})},
	{"reset --pause", map[string]cell{
		"2.10": {outcome: unsupported, exit: 2, says: "--pause needs the consumer pause API", text: "exit 2, nothing changed"},
		"2.11": {outcome: fallback, text: "paused, recreate"},
		"2.12": {outcome: fallback, text: "paused, recreate"},
		"2.14": {outcome: pass, text: "paused, in place"},
		"2.15": {outcome: pass, text: "paused, in place"},
	}},
	{"snapshot restore", since("2.14",
		cell{outcome: fallback, text: "recreate"},
		cell{outcome: pass, text: "in place"})},
	{"consume", since("2.11",
		cell{outcome: unsupported, exit: 2, says: "does not support limit markers (needs nats-server 2.11 or later)", text: "exit 2 (the ack bucket needs limit markers)"},
		cell{outcome: pass, text: "ack records"})},
}

// minors are the matrix's columns.
func minors() []string {
	var m []string
	for _, v := range versionsTest {
		m = append(m, minorOf(v))
	}
	return append(m, pinnedMinor)
}

// minorLess compares "2.9" < "2.10".
func minorLess(a, b string) bool {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// expect is the expected cell of a scenario on a minor release.
func expect(minor, scenario string) cell {
	for _, r := range expectations {
		if r.scenario == scenario {
			if c, ok := r.cells[minor]; ok {
				return c
			}
		}
	}
	return cell{outcome: failed, text: "no expectation for " + scenario + " on " + minor}
}

// readmeTable renders expectations as the README's markdown table, one
// column per version.
func readmeTable(versions []string) string {
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, v := range versions {
		fmt.Fprintf(&b, " %s |", strings.TrimPrefix(v, "v"))
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(versions)))
	b.WriteString("\n")
	for _, r := range expectations {
		fmt.Fprintf(&b, "| %s |", r.scenario)
		for _, v := range versions {
			c := r.cells[minorOf(v)]
			switch c.outcome {
			case pass:
				fmt.Fprintf(&b, " %s |", c.text)
			case fallback:
				fmt.Fprintf(&b, " fallback: %s |", c.text)
			default:
				fmt.Fprintf(&b, " **no**: %s |", c.text)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// observedTable is the matrix a run saw: outcome per version and scenario.
func observedTable(versions []string, got map[string]map[string]outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s", "scenario")
	for _, v := range versions {
		fmt.Fprintf(&b, " %-12s", strings.TrimPrefix(v, "v"))
	}
	b.WriteString("\n")
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "%-18s", sc.name)
		for _, v := range versions {
			o, ok := got[minorOf(v)][sc.name]
			if !ok {
				o = "skipped"
			}
			fmt.Fprintf(&b, " %-12s", o)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestReadmeMatrixCurrent checks that docs/server-versions.md's "Server versions" table
// is the one rendered from expectations (which TestServerVersions holds
// every version to). With -update it rewrites the table.
func TestReadmeMatrixCurrent(t *testing.T) {
	pinned, err := natsproc.PinnedVersion()
	if err != nil {
		t.Fatal(err)
	}
	want := readmeTable(append(append([]string{}, versionsTest...), pinned))
	path := filepath.Join("..", "..", "docs", "server-versions.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "| scenario |")
	if start < 0 {
		t.Fatalf("docs/server-versions.md has no server version table (a line starting \"| scenario |\"); want:\n%s", want)
	}
	end := start + strings.Index(readme[start:], "\n\n") + 1
	if readme[start:end] == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme[:start]+want+readme[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/server-versions.md's server version table is not current (go test ./internal/matrix -run TestReadmeMatrixCurrent -update); have:\n%s\nwant:\n%s", readme[start:end], want)
}
