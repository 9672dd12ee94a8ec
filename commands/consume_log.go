package commands

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// logResult writes consume's line about a result that a person should see
// (a failure, a release, a payload mismatch): in text mode the sentence,
// in --log-format json the same sentence with the message's fields.
// Other results are said only in --json's lines and the summary.
func logResult(lg *slog.Logger, r acks.Result) {
	level, msg := slog.LevelInfo, ""
	attrs := []slog.Attr{
		slog.String("stream", r.Stream), slog.String("consumer", r.Consumer), slog.Uint64("seq", r.Seq),
		slog.String("subject", Escape(r.Subject)), slog.String("key", Escape(r.Key)),
		slog.String("action", string(r.Action)), slog.Uint64("deliveries", r.Deliveries),
	}
	switch {
	case r.Action == acks.Failed && r.Err != nil:
		level, msg = levelNotice, fmt.Sprintf("message %d (%s): failed: %v%s", r.Seq, Escape(r.Subject), r.Err, failNote(r))
		attrs = append(attrs, slog.String("error", r.Err.Error()), slog.Bool("final", r.Final))
		if r.Retry > 0 {
			attrs = append(attrs, slog.Int64("retry_ms", r.Retry.Milliseconds()))
		}
		if r.DeadLetterSeq != 0 {
			attrs = append(attrs, slog.String("dead_letter_stream", r.DeadLetterStream), slog.Uint64("dead_letter_seq", r.DeadLetterSeq))
		}
	case r.Action == acks.Released:
		msg = fmt.Sprintf("message %d (%s): released: the command was stopped after --stop-timeout; it runs again on its next delivery", r.Seq, Escape(r.Subject))
	case r.Mismatch && r.DuplicateRun:
		level, msg = levelNotice, fmt.Sprintf("message %d (%s): key %q was done for message %d with a different payload; ran again (--on-mismatch run)", r.Seq, Escape(r.Subject), r.Key, r.RecordSeq)
		attrs = append(attrs, slog.Bool("mismatch", true), slog.Uint64("record_seq", r.RecordSeq))
	case r.Mismatch:
		level, msg = levelNotice, fmt.Sprintf("message %d (%s): key %q was done for message %d with a different payload; skipped as a duplicate", r.Seq, Escape(r.Subject), r.Key, r.RecordSeq)
		attrs = append(attrs, slog.Bool("mismatch", true), slog.Uint64("record_seq", r.RecordSeq))
	default:
		return
	}
	lg.LogAttrs(context.Background(), level, msg, attrs...)
}
