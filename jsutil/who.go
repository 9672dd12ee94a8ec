package jsutil

import (
	"os"
	"os/user"
)

// Who fills in the user and host that records of a change (snapshots,
// reset history) name, where the caller gave none: the operating system's
// user and host name.
func Who(userName, host string) (string, string) {
	if userName == "" {
		if u, err := user.Current(); err == nil {
			userName = u.Username
		}
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	return userName, host
}
