//go:build linux

package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// What nats-server does to its store, read from its source
// (server/filestore.go, server/jetstream.go, v2.15.2): it takes no lock on
// the directory and writes no marker of its own. Once a stream has been
// written to since the server started, the server keeps that stream's last
// message block (jetstream/<account>/streams/<stream>/msgs/N.blk) open for
// writing; a server that has not written since it started holds no file of
// the store open. So inUse looks at every other process it may inspect in
// /proc for:
//   - an open file inside dir (any writer, whatever its name), and
//   - a nats-server whose store directory, from its command line
//     (-sd/--store_dir) or its configuration file (-c/--config, store_dir
//     at the top level or in the jetstream block), is dir, inside dir or
//     holds dir.
//
// It cannot see processes of other users whose files it may not read, nor
// servers in another PID namespace (a container) or on another machine
// sharing the directory; README.md says so.

// procRoot is where the kernel shows its processes.
const procRoot = "/proc"

// inUse returns who uses the store directory dir (absolute), or nil.
func inUse(dir string) *user {
	dir = realPath(dir)
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if u := procUses(pid, dir); u != nil {
			return u
		}
	}
	return nil
}

// user is a process found using a store directory.
type user struct {
	pid     int
	command string
	how     string
}

func (u *user) String() string {
	return fmt.Sprintf("%s (pid %d: %s)", u.command, u.pid, u.how)
}

func procUses(pid int, dir string) *user {
	base := filepath.Join(procRoot, strconv.Itoa(pid))
	raw, err := os.ReadFile(filepath.Join(base, "cmdline"))
	if err != nil || len(raw) == 0 {
		return nil
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	command := filepath.Base(args[0])
	if fds, err := os.ReadDir(filepath.Join(base, "fd")); err == nil {
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(base, "fd", fd.Name()))
			if err == nil && within(target, dir) {
				return &user{pid: pid, command: command, how: "has " + target + " open"}
			}
		}
	}
	if !strings.Contains(command, "nats-server") {
		return nil
	}
	cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
	store, from := natsServerStore(args[1:], cwd)
	if store == "" {
		return nil
	}
	store = realPath(store)
	if within(store, dir) || within(dir, store) {
		return &user{pid: pid, command: command, how: "store directory " + store + " from its " + from}
	}
	return nil
}

// natsServerStore works out the store directory of a nats-server started
// with args in the working directory cwd, as nats-server reads them: the
// command line's -sd/--store_dir wins over the configuration file's
// store_dir; with JetStream on and neither, the server uses a directory
// under the temporary directory. from says where the answer came from.
func natsServerStore(args []string, cwd string) (store, from string) {
	var sd, config string
	js := false
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		switch name {
		case "sd", "store_dir", "c", "config":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			if name == "c" || name == "config" {
				config = val
			} else {
				sd = val
			}
		case "js", "jetstream":
			js = !hasVal || val == "true"
		}
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || cwd == "" {
			return p
		}
		return filepath.Join(cwd, p)
	}
	if sd != "" {
		return abs(sd), "command line"
	}
	if config != "" {
		o := &server.Options{}
		_ = o.ProcessConfigFile(abs(config)) // best effort: an unreadable file tells nothing
		if o.StoreDir != "" {
			return abs(o.StoreDir), "configuration file " + abs(config)
		}
		js = js || o.JetStream
	}
	if js {
		return filepath.Join(os.TempDir(), "nats"), "default (no store_dir given)"
	}
	return "", ""
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// realPath resolves symbolic links where it can, so two names of one
// directory compare equal.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
