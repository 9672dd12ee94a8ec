package commands

import (
	"runtime"
	"runtime/debug"
)

// VersionCmd prints the module version and the Go version.
type VersionCmd struct{}

// Help is the long help of version.
func (VersionCmd) Help() string {
	return "Examples:\n  jsctl version\n  jsctl version --json"
}

// Run prints the version.
func (VersionCmd) Run(env *Env) error {
	v := moduleVersion()
	p, err := env.Printer()
	if err != nil {
		return err
	}
	if p.JSON {
		return p.PrintJSON(map[string]string{"version": v, "go": runtime.Version()})
	}
	p.Printf("jsctl %s (%s)\n", v, runtime.Version())
	return nil
}

func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}
