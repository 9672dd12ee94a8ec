package commands

import (
	"runtime"
	"runtime/debug"
)

// VersionCmd prints the module version and the Go version.
type VersionCmd struct{}

// Help is the long help of version.
func (VersionCmd) Help() string {
	return `Prints the jsctl module version, the Go version it was built with and, when the
build recorded it, the source commit. It never connects to a server.

Examples:
  jsctl version
  jsctl version --json`
}

// versionInfo is what version prints; --json prints it as is.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
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
	p.Printf("jsctl %s (%s%s)\n", v.Version, v.Go, extra)
	return nil
}

// buildVersion reads the version the Go toolchain stamped into the binary:
// the module version for `go install ...@version`, a pseudo-version or
// "(devel)" for a local build, and the VCS commit when it was recorded.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
			if len(v.Commit) > 12 {
				v.Commit = v.Commit[:12]
			}
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}
