package commands

import (
	"bytes"
	"strings"
	"testing"
)

// A panic that reaches Run is a bug: exit 1 with a message saying so and
// the stack, never exit 2 (usage), and no secret in the message. kong's own
// exit after --help keeps its code.
func TestCatchPanic(t *testing.T) {
	run := func(v any) (int, string) {
		var stderr bytes.Buffer
		code := -1
		func() {
			defer catchPanic(&code, &stderr, &Globals{Password: "s3cret"})
			panic(v)
		}()
		return code, stderr.String()
	}
	code, msg := run("makechan: size out of range nats://admin:s3cret@host s3cret")
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, want := range []string{"jsctl: internal error (a bug in jsctl, please report it with the trace below): makechan: size out of range", "goroutine ", "TestCatchPanic"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("stderr shows the password:\n%s", msg)
	}
	if code, msg := run(exitRequest{0}); code != 0 || msg != "" {
		t.Errorf("kong's exit: code %d, stderr %q", code, msg)
	}
}
