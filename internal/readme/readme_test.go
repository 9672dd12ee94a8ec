// Package readme checks that README.md keeps its promises: the two commands
// at the top, and the test command that .ci/run runs.
package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstCommands returns the commands of the first shell block of the README.
func firstCommands(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "```sh\n")
	if !ok {
		t.Fatal("README.md has no ```sh block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md's first ```sh block is not closed")
	}
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

func TestReadmeStartsWithDemoAndTests(t *testing.T) {
	cmds := firstCommands(t, readFile(t, "README.md"))
	if len(cmds) != 2 {
		t.Fatalf("the README's first block must hold exactly two commands, has %q", cmds)
	}
	if cmds[0] != "go run ./cmd/jsctl demo" {
		t.Errorf("first command = %q, want the demo", cmds[0])
	}
	if !strings.HasPrefix(cmds[1], "go test ") {
		t.Errorf("second command = %q, want the test command", cmds[1])
	}
	ci := readFile(t, ".ci/run")
	if !strings.Contains(ci, "\n"+cmds[1]+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q", cmds[1])
	}
}
