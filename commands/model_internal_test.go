package commands

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestModelHasOnlyTheCommandRun checks that a command line naming a command
// builds kong's model of that command alone, and that the root help, an
// unknown command, completion and the manual get every command.
func TestModelHasOnlyTheCommandRun(t *testing.T) {
	all := []string{"seek", "stream", "pick", "consumer", "consume", "acks", "audit", "demo", "serve", "completion", "version", "man", "__complete"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"seek", "ORDERS", "-1h"}, []string{"seek"}},
		{[]string{"-s", "nats://127.0.0.1:1", "--json", "consumer", "ls", "ORDERS"}, []string{"consumer"}},
		{[]string{"--server=nats://127.0.0.1:1", "-j", "--timeout", "1s", "version"}, []string{"version"}},
		{[]string{"--tz", "UTC", "consume", "ORDERS", "billing", "--exec", "true"}, []string{"consume"}},
		{[]string{"consumer", "--help"}, []string{"consumer"}},
		{[]string{"--help"}, all},
		{[]string{}, all},
		{[]string{"man"}, all},
		{[]string{"__complete", "bash"}, all},
		{[]string{"seak"}, all},
		{[]string{"--no-such-flag", "seek"}, all},
		{[]string{"-js", "nats://127.0.0.1:1", "seek"}, all},
		{[]string{"--", "seek"}, all},
	} {
		p, err := newParser(&CLI{}, &Env{}, io.Discard, io.Discard, onlyCommand(c.args)...)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		var got []string
		for _, n := range p.Model.Children {
			got = append(got, n.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("jsctl %s: model has commands %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
		if full := len(c.want) > 1; full != strings.Contains(p.Model.Help, "Exit codes:") {
			t.Errorf("jsctl %s: root description present = %v, want %v", strings.Join(c.args, " "), !full, full)
		}
	}
}

// TestVersionAllocatesLittle bounds what "jsctl version" allocates: with
// the model of every command it allocated more than building that model
// does (2.3 MB), which with the packages' initialisation made the garbage
// collector run before the command did; now it allocates about a tenth.
// The bound is relative, so the race detector's own allocations (which
// multiply both) do not matter.
func TestVersionAllocatesLittle(t *testing.T) {
	full := allocated(func() {
		if _, err := newParser(&CLI{}, &Env{}, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	})
	version := allocated(func() {
		if code := Run(context.Background(), []string{"version"}, strings.NewReader(""), io.Discard, io.Discard, false); code != ExitOK {
			t.Fatalf("jsctl version: exit %d", code)
		}
	})
	t.Logf("jsctl version allocated %d bytes, the full command model %d", version, full)
	if version*3 > full {
		t.Errorf("jsctl version allocated %d bytes, want at most a third of the full command model's %d", version, full)
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
