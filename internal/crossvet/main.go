// Command crossvet is go vet for the release targets other than the one
// it runs on: it type-checks the module's packages and their tests, and
// runs go vet's analyzers on them, as GOOS/GOARCH would build them (CI:
// go run ./internal/crossvet linux/arm64 darwin/amd64 ...).
//
// `GOOS=windows go vet ./...` does the same by compiling every dependency
// (nats-server included) for that target first: on 2 cores about 100 s of
// CPU a target on a fresh machine, where this, which type-checks the
// dependencies from source and compiles nothing, takes about 10 s (see
// docs/development.md).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/suite/vet"
	"golang.org/x/tools/go/packages"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crossvet GOOS/GOARCH...")
		os.Exit(2)
	}
	failed := false
	for _, target := range os.Args[1:] {
		n, err := check(".", target, os.Stdout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crossvet: %s: %v\n", target, err)
			os.Exit(2)
		}
		fmt.Printf("crossvet: %s: %d problems\n", target, n)
		failed = failed || n > 0
	}
	if failed {
		os.Exit(1)
	}
}

// check loads the packages of dir (./..., tests included) for target,
// reports their type errors and go vet's findings to w, and returns how
// many there were.
func check(dir, target string, w io.Writer) (int, error) {
	goos, goarch, ok := strings.Cut(target, "/")
	if !ok || goos == "" || goarch == "" {
		return 0, fmt.Errorf("want GOOS/GOARCH, such as windows/amd64")
	}
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax, Dir: dir, Tests: true,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return 0, err
	}
	n := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			fmt.Fprintf(w, "%s: %s\n", target, e)
			n++
		}
	})
	if n > 0 {
		return n, nil // the analyzers need packages that type-check
	}
	g, err := checker.Analyze(goVet(), pkgs, nil)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{} // a package and its test variant share files
	for act := range g.All() {
		if !act.IsRoot {
			continue
		}
		for _, d := range act.Diagnostics {
			msg := fmt.Sprintf("%s: %s: %s (%s)", target, act.Package.Fset.Position(d.Pos), d.Message, act.Analyzer.Name)
			if !seen[msg] {
				seen[msg] = true
				fmt.Fprintln(w, msg)
				n++
			}
		}
	}
	return n, nil
}

// goVet is the analyzers `go vet` runs (go tool vet help): the suite of
// golang.org/x/tools without the two that go vet leaves out.
func goVet() []*analysis.Analyzer {
	var out []*analysis.Analyzer
	for _, a := range vet.Suite {
		if a.Name != "scannererr" && a.Name != "sqlrowserr" {
			out = append(out, a)
		}
	}
	return out
}
