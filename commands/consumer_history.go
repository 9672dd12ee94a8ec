package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerHistoryCmd lists a consumer's recorded resets.
type ConsumerHistoryCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream of the consumer."`
	Consumer string `arg:"" predictor:"consumer" help:"Consumer whose resets to list."`
}

// Help is the long help of consumer history.
func (ConsumerHistoryCmd) Help() string {
	return `Lists the resets recorded for a consumer (oldest first) in the KV bucket
JSCTL_RESET_HISTORY: when, by whom, the method, and the old and new position.
"jsctl consumer reset STREAM CONSUMER --to-previous" undoes the last one.
A record that cannot be used (it does not parse, is another consumer's, or
holds impossible values) is reported on stderr by its key and revision and
left out; the others are listed. --to-previous refuses while the latest one
is such a record. A record of an earlier stream or consumer of the name (deleted
and created again since) is listed, with a warning naming both creation times.

Examples:
  jsctl consumer history ORDERS billing
  jsctl consumer history ORDERS billing --json`
}

// Run lists the history.
func (c *ConsumerHistoryCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	recs, bad, err := reset.HistoryChecked(ctx, cl.JS, "", c.Stream, c.Consumer)
	if err != nil {
		return err
	}
	warnSkipped(env, bad)
	earlier, err := reset.NotOfThisConsumer(ctx, cl.JS, c.Stream, c.Consumer, recs)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if why := earlier[r.Revision]; why != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: history revision %d is of an earlier %s: %s; --to-previous does not go back to it\n", r.Revision, earlierWhat(why), TermSafe(why))
		}
	}
	if p.JSON {
		return p.PrintJSON(recs)
	}
	if len(recs) == 0 && bucketMissing(ctx, cl.JS, reset.HistoryBucket) {
		p.Printf("%s", missingText("recorded resets of consumer "+c.Consumer+" on "+c.Stream, reset.HistoryBucket))
		return nil
	}
	if len(recs) == 0 {
		p.Printf("No recorded resets of consumer %s on %s.\n", c.Consumer, c.Stream)
		return nil
	}
	var rows [][]string
	for _, r := range recs {
		undo := ""
		if r.UndoOf > 0 {
			undo = "undo of " + u64(r.UndoOf)
		}
		rows = append(rows, []string{
			u64(r.Revision), p.TableTime(r.Time), string(r.Method), r.Target.String(),
			fmt.Sprintf("%d/%d", r.From.Delivered, r.From.AckFloor), u64(r.To.Sequence),
			yesNo(r.Verified), undo, r.User + "@" + r.Host,
		})
	}
	return p.Table([]string{"REVISION", "TIME", "METHOD", "TARGET", "FROM (DELIVERED/ACK FLOOR)", "TO", "VERIFIED", "UNDO", "BY"}, rows,
		narrowHeader("FROM (DELIVERED/ACK FLOOR)", "FROM DLV/ACK"), wideOnly("UNDO"))
}

// earlierWhat is what a record is of an earlier one of: the stream or the
// consumer, as why (a jsutil.Recreated text) names it.
func earlierWhat(why string) string {
	if strings.HasPrefix(why, "stream ") {
		return "stream"
	}
	return "consumer"
}

func itoa(n int) string { return strconv.Itoa(n) }
