//go:build !linux

package trustmatrix

// pickRows: pick's cells drive a pseudo-terminal (Linux only here).
func pickRows() []row { return nil }
