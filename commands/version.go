package commands

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// VersionCmd prints the module version and the Go version.
type VersionCmd struct{}

// Help is the long help of version.
func (VersionCmd) Help() string {
	return `Prints the jsctl version, the Go version it was built with, the platform and,
when the build recorded them, the source commit and the build date. A release
binary has them stamped in; a binary from go install has the module version and,
from a checkout, the commit. It never connects to a server.

Examples:
  jsctl version
  jsctl version --json`
}

// What a release build stamps in with the linker (-X, see .goreleaser.yaml
// and the Dockerfile); empty otherwise. They are set once, at link time.
var (
	stampVersion string // "1.4.0"
	stampCommit  string // the full commit hash
	stampDate    string // the build time, RFC 3339
)

// versionInfo is what version prints; --json prints it as is.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Date     string `json:"date,omitempty"`
}

// Run prints the version.
func (VersionCmd) Run(env *Env) error {
	v := buildVersion()
	p, err := env.Printer()
	if err != nil {
		return err
	}
	if p.JSON {
		return p.PrintJSON(v)
	}
	extra := ""
	if v.Commit != "" {
		extra = ", commit " + v.Commit
		if v.Modified {
			extra += " (modified)"
		}
	}
	if v.Date != "" {
		extra += ", built " + v.Date
	}
	p.Printf("jsctl %s (%s, %s%s)\n", v.Version, v.Go, v.Platform, extra)
	return nil
}

// buildVersion reads the version stamped into the binary: by a release
// build (stampVersion and the others), else what the Go toolchain
// recorded: the module version for `go install ...@version`, a
// pseudo-version or "(devel)" for a local build, and the VCS commit when
// it was recorded.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if stampVersion != "" {
		v.Version = strings.TrimPrefix(stampVersion, "v")
	}
	if stampCommit != "" {
		v.Commit = stampCommit
	}
	if stampDate != "" {
		v.Date = stampDate
	}
	if len(v.Commit) > 12 {
		v.Commit = v.Commit[:12]
	}
	return v
}
