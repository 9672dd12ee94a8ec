//go:build windows

package embedded

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockStore takes an exclusive lock on the store directory so two servers
// never write the same store (say `jsctl serve` and `jsctl --embedded` at
// once): a lock on the first byte of DIR/jsctl.lock, as lock_unix.go's
// flock. The lock goes with the process; unlock releases it earlier.
func lockStore(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "jsctl.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol); err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, errStoreBusy
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
