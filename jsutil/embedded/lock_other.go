//go:build !unix && !windows

package embedded

// lockStore does not lock on this platform.
func lockStore(string) (func(), error) { return func() {}, nil }
