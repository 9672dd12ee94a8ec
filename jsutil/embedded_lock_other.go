//go:build !unix

package jsutil

// lockStore does not lock on this platform.
func lockStore(string) (func(), error) { return func() {}, nil }
