package natsproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// PinnedVersion is the nats-server module version this module requires
// (the one Binary builds).
func PinnedVersion() (string, error) { return serverVersion() }

// VersionBinary returns the path of a nats-server binary of the given
// module version ("v2.10.27"), built with
// `go install github.com/nats-io/nats-server/v2@VERSION` (downloading the
// module when the module cache lacks it) and kept in the user's cache
// directory ($XDG_CACHE_HOME/jsctl-test, or os.UserCacheDir), keyed by the
// version, the Go version and the platform, for later calls and runs. The
// pinned version is Binary's. built reports whether it was built now
// rather than found. A build still running when ctx ends is stopped.
func VersionBinary(ctx context.Context, version string) (path string, built bool, err error) {
	if pinned, perr := serverVersion(); perr == nil && pinned == version {
		if p, ok := cachedBinary(pinnedPath(pinned)); ok {
			return p, false, nil
		}
		p, err := build()
		return p, err == nil, err
	}
	dir, err := versionCacheDir()
	if err != nil {
		return "", false, err
	}
	bin := filepath.Join(dir, "nats-server-"+version)
	if p, ok := cachedBinary(bin); ok {
		return p, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	// go install into a directory of our own, then rename into place, so
	// concurrent test processes never run a half-written binary.
	tmp, err := os.MkdirTemp(dir, "build-*")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "install", serverModule+"@"+version)
	cmd.Dir = tmp // outside any module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return "", false, fmt.Errorf("go install %s@%s: %v: %s", serverModule, version, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(filepath.Join(tmp, "nats-server"), bin); err != nil && !errors.Is(err, os.ErrExist) {
		return "", false, err
	}
	return bin, true, nil
}

// BuildVersions builds (or finds) the binaries of versions, at most
// parallel at once, and logs each build's duration with logf. It returns
// the path of each version that is available and the error of each that
// is not. Builds still running when ctx ends are stopped.
func BuildVersions(ctx context.Context, versions []string, parallel int, logf func(format string, args ...any)) (map[string]string, map[string]error) {
	if parallel < 1 {
		parallel = 1
	}
	paths, errs := map[string]string{}, map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, v := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			p, built, err := VersionBinary(ctx, v)
			d := time.Since(start).Round(10 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs[v] = err
				logf("nats-server %s: not available after %s: %v", v, d, err)
			case built:
				paths[v] = p
				logf("nats-server %s: built in %s (%s)", v, d, p)
			default:
				paths[v] = p
				logf("nats-server %s: cached (%s, %s)", v, p, d)
			}
		}()
	}
	wg.Wait()
	return paths, errs
}

// versionCacheDir is where VersionBinary keeps its binaries.
func versionCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "jsctl-test", runtime.Version()+"-"+runtime.GOOS+"-"+runtime.GOARCH), nil
}

// pinnedPath is where build keeps the pinned version's binary.
func pinnedPath(version string) string {
	return filepath.Join(os.TempDir(), "jsctl-natsproc", version+"-"+runtime.Version()+"-"+runtime.GOOS+"-"+runtime.GOARCH, "nats-server")
}

// cachedBinary reports whether an executable is at path.
func cachedBinary(path string) (string, bool) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return path, true
	}
	return path, false
}
