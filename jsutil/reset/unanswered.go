package reset

import (
	"context"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// again waits d before a retry loop that gives up at deadline asks the
// server again after err. Where err is a request left unanswered (lost),
// jsutil.AskAgain first decides whether to ask again at all (not once the
// server has been silent for the whole retry budget) and tells the user
// what jsctl waits for. False: give up (ctx ended, or the budget is
// spent).
func again(ctx context.Context, err error, deadline time.Time, d time.Duration) bool {
	if lost(err) && ctx.Err() == nil && !jsutil.AskAgain(ctx, deadline, err) {
		return false
	}
	return sleepCtx(ctx, d)
}
