//go:build !linux

package embedded

// user is a process found using a store directory.
type user struct{}

func (*user) String() string { return "" }

// inUse finds nothing on systems without /proc: only jsctl's own lock
// protects the store there (README.md says so).
func inUse(string) *user { return nil }
