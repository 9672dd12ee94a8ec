//go:build !unix

package embedded

// lockStore does not lock on this platform.
func lockStore(string) (func(), error) { return func() {}, nil }
