package acks

import (
	"fmt"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
)

// denial is the error that ends a run whose permissions the server
// refused: a pull request, an ack, a write or read of the bucket's
// records, a dead letter or the reply inbox. The server reports a refused
// publish asynchronously (it becomes the connection's last error) and never
// answers it, so without this check a run would wait out its pull
// requests and nak the same messages again and again. A refusal of some
// subject this run does not use is not its business, nor is one reported
// before the run started (l.priorErr).
func (l *loop) denial() error {
	nc := l.s.js.Conn()
	subject, last := jsutil.DeniedSince(nc, l.priorErr)
	if last == nil {
		return nil
	}
	what := ""
	switch {
	case subject == "":
		if jsutil.Denied(nc, "") == nil {
			return nil
		}
		what = "receive replies (" + last.Error() + ")"
	case strings.HasPrefix(subject, l.s.subject):
		what = fmt.Sprintf("write ack records to bucket %q", l.s.bucket)
	case strings.HasSuffix(subject, "CONSUMER.MSG.NEXT."+l.stream+"."+l.name):
		what = fmt.Sprintf("fetch from consumer %q of stream %q", l.name, l.stream)
	case strings.HasPrefix(subject, "$JS.ACK.") && strings.Contains(subject, "."+l.stream+"."+l.name+"."):
		what = fmt.Sprintf("acknowledge messages of consumer %q of stream %q", l.name, l.stream)
	case isRead(subject, "KV_"+l.s.bucket):
		what = fmt.Sprintf("read ack records of bucket %q", l.s.bucket)
	case isRead(subject, l.stream):
		what = fmt.Sprintf("read messages of stream %q (for dead letters and failed records)", l.stream)
	case l.c.deadLetter != "" && subject == l.c.deadLetter:
		what = fmt.Sprintf("publish dead letters to %q", subject)
	default:
		return nil
	}
	if subject != "" {
		what += fmt.Sprintf(" (the server refused a publish to %q)", subject)
	}
	return jsutil.Errorf(jsutil.ErrPermission, "consume from consumer %q of stream %q: permission denied: this user may not %s", l.name, l.stream, what)
}

// isRead reports whether subject is a JetStream API request that reads a
// message of stream (a get, direct or not), whatever the API prefix.
func isRead(subject, stream string) bool {
	for _, op := range []string{"STREAM.MSG.GET.", "DIRECT.GET."} {
		if i := strings.Index(subject, op+stream); i >= 0 {
			rest := subject[i+len(op)+len(stream):]
			if rest == "" || rest[0] == '.' {
				return true
			}
		}
	}
	return false
}
