package commands

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// An unanswered request and a just-found bucket's "stream not found" are
// each said plainly, naming what jsctl waits for and for how long.
func TestWaitLinesUnanswered(t *testing.T) {
	for _, tc := range []struct {
		u    jsutil.Unanswered
		want string
	}{
		{jsutil.Unanswered{Until: time.Now().Add(27700 * time.Millisecond), Err: errors.New("timeout")},
			"jsctl: no answer from the server; asking again for up to 28s (Ctrl-C to stop)\n"},
		{jsutil.Unanswered{Until: time.Now().Add(4700 * time.Millisecond), Err: errors.New("stream not found"), Bucket: "JSCTL_ACKS"},
			"jsctl: bucket \"JSCTL_ACKS\" was just found, but a server does not know its stream yet; asking again for up to 5s (Ctrl-C to stop)\n"},
	} {
		var out bytes.Buffer
		e := &Env{Stderr: &out}
		l := &waitLines{w: &out, log: e.Logger(), last: map[string]time.Time{}}
		l.unanswered(tc.u)
		l.unanswered(tc.u) // at most every waitNoticeEvery
		if out.String() != tc.want {
			t.Errorf("said %q, want %q", out.String(), tc.want)
		}
	}
}
