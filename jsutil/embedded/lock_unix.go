//go:build unix

package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// lockStore takes an exclusive lock on the store directory so two servers
// never write the same store (say `jsctl serve` and `jsctl --embedded` at
// once). The lock goes with the process; unlock releases it earlier.
func lockStore(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "jsctl.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errStoreBusy
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
