package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Query selects events.
type Query struct {
	Stream, Consumer string
	Actions          []Action
	// Since and Until bound the events' stored times (zero: unbounded).
	Since, Until time.Time
	// By keeps events whose OS user or NATS identity is By.
	By string
	// Follow keeps reading new events until ctx ends.
	Follow bool
	// Timeout bounds each request.
	Timeout time.Duration
}

// Bad is a message on the audit stream that is not an event jsctl can
// read: reported by its sequence and skipped.
type Bad struct {
	Seq     uint64
	Subject string
	Problem string
}

func (b Bad) String() string {
	return fmt.Sprintf("audit stream %s message %d on %q: %s (skipped)", Stream, b.Seq, b.Subject, b.Problem)
}

// Read calls each with the events q selects, oldest first, read by an
// ordered consumer (nothing is left on the server), and bad with the
// messages that are not events. Without Follow it returns once it has read
// every event stored when it started; with Follow it waits for new ones
// until ctx ends (then it returns nil). A missing audit stream is
// jsutil.ErrNotFound.
func Read(ctx context.Context, js jetstream.JetStream, q Query, each func(*Event) error, bad func(Bad)) error {
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = js.Options().DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	s, err := js.Stream(rctx, Stream)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return jsutil.Errorf(jsutil.ErrNotFound, "audit stream %q does not exist: no change has been recorded yet", Stream)
	}
	if err != nil {
		return jsutil.Wrap(jsutil.RequestError(js.Conn(), jsutil.APIPrefix(js.Options())+"STREAM.INFO."+Stream, err), "open audit stream %q", Stream)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: Filters(q.Stream, q.Consumer, q.Actions)}
	if !q.Since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &q.Since
	}
	rctx, cancel = context.WithTimeout(ctx, timeout)
	c, err := s.OrderedConsumer(rctx, cfg)
	cancel()
	if err != nil {
		return jsutil.Wrap(err, "read audit stream %q", Stream)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		_ = s.DeleteConsumer(dctx, c.CachedInfo().Name)
	}()
	info := c.CachedInfo()
	left := info.NumPending
	if !q.Follow && left == 0 {
		return nil
	}
	it, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return jsutil.Wrap(err, "read audit stream %q", Stream)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				if q.Follow && ctx.Err() != nil {
					return nil
				}
				return ctx.Err()
			}
			return jsutil.Wrap(err, "read audit stream %q", Stream)
		}
		md, merr := m.Metadata()
		if merr != nil {
			return jsutil.Wrap(merr, "read audit stream %q", Stream)
		}
		if !q.Until.IsZero() && md.Timestamp.After(q.Until) && !q.Follow {
			return nil
		}
		e, derr := Decode(m.Data())
		if derr != nil {
			if bad != nil {
				bad(Bad{Seq: md.Sequence.Stream, Subject: m.Subject(), Problem: derr.Error()})
			}
		} else if Subject(e.Action, e.Stream.Name, e.Consumer.Name) != m.Subject() {
			if bad != nil {
				bad(Bad{Seq: md.Sequence.Stream, Subject: m.Subject(), Problem: "the event names another action, stream or consumer than its subject"})
			}
		} else if e.Stored, e.Warnings = md.Timestamp, e.Implausible(md.Timestamp); q.match(e, md.Timestamp) {
			if err := each(e); err != nil {
				return err
			}
		}
		if !q.Follow && md.NumPending == 0 {
			return nil
		}
	}
}

func (q Query) match(e *Event, stored time.Time) bool {
	if !q.Until.IsZero() && stored.After(q.Until) {
		return false
	}
	if q.By != "" && e.User != q.By && e.NATS.String() != q.By && e.NATS.User != q.By && e.NATS.JWTName != q.By && e.NATS.JWTSub != q.By && e.NATS.NKey != q.By {
		return false
	}
	return true
}
