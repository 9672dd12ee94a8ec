package commands_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/commands"
)

// TestManPageUpToDate fails when docs/man/jsctl.1 differs from `jsctl man`,
// which makes the page from the command model; -update rewrites it:
//
//	go test ./commands -run TestManPageUpToDate -update
func TestManPageUpToDate(t *testing.T) {
	var out, errb bytes.Buffer
	if code := commands.Run(context.Background(), []string{"man"}, strings.NewReader(""), &out, &errb, false); code != 0 {
		t.Fatalf("jsctl man: exit %d: %s", code, errb.String())
	}
	page := out.String()
	for _, want := range []string{".TH JSCTL 1", ".SS \"jsctl consumer reset ", "\\-\\-execute", ".SH EXIT STATUS", "NATS_URL"} {
		if !strings.Contains(page, want) {
			t.Errorf("jsctl man lacks %q", want)
		}
	}
	path := filepath.Join("..", "docs", "man", "jsctl.1")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./commands -run TestManPageUpToDate -update)", err)
	}
	if string(b) != page {
		t.Errorf("%s is out of date (run: go test ./commands -run TestManPageUpToDate -update)", path)
	}
}
