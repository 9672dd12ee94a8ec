package unixonly

import "syscall"

// Stop is Unix-only code in a file built everywhere.
func Stop(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
