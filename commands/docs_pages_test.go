package commands_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocPagesListed: every page under docs/ is in docPages, so its command
// lines run (TestReadmeCommands), and every page the README links to exists.
func TestDocPagesListed(t *testing.T) {
	listed := map[string]bool{}
	for _, p := range docPages {
		listed[p] = true
	}
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages under docs/")
	}
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		if !listed[rel] {
			t.Errorf("%s is not in docPages (commands/readme_commands_test.go): its command lines would not run", rel)
		}
	}
}

// headingSlug is the anchor GitHub gives a heading.
func headingSlug(h string) string {
	h = strings.ToLower(strings.TrimSpace(strings.TrimLeft(h, "#")))
	h = regexp.MustCompile(`[^\p{L}\p{N}\- _]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// pageAnchors returns the anchors of a page's headings (outside code blocks).
func pageAnchors(page string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence && strings.HasPrefix(l, "#") {
			out[headingSlug(l)] = true
		}
	}
	return out
}

// TestDocLinks: every relative link of the README and docs/ names a file
// that exists and, with #anchor, a heading of that file.
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
			}
			tb, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", f, target)
				continue
			}
			if anchor != "" && !pageAnchors(string(tb))[anchor] {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", f, target, file, anchor)
			}
		}
	}
}
