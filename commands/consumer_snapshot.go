package commands

import (
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotCmd groups the snapshot commands.
type ConsumerSnapshotCmd struct {
	Save ConsumerSnapshotSaveCmd `cmd:"" help:"Save consumers' positions and configurations under a name."`
	Ls   ConsumerSnapshotLsCmd   `cmd:"" help:"List saved snapshots."`
	Show ConsumerSnapshotShowCmd `cmd:"" help:"Show a snapshot and where each consumer is now against it."`
	Rm   ConsumerSnapshotRmCmd   `cmd:"" help:"Remove a snapshot."`
	// Restore is last: it moves consumers.
	Restore ConsumerSnapshotRestoreCmd `cmd:"" help:"Return consumers to a snapshot's positions (plan first, undoable)."`
}

// Help is the long help of the consumer snapshot group.
func (ConsumerSnapshotCmd) Help() string {
	return `Examples:
  jsctl consumer snapshot save pre-deploy ORDERS --all   # before deploying new consumer code
  jsctl consumer snapshot show pre-deploy                # where each consumer is now against it
  jsctl consumer snapshot restore pre-deploy --execute   # go back if the deploy went wrong
  jsctl consumer snapshot ls ORDERS`
}

// snapshotConsumerRows are the table rows of a snapshot's consumers, with
// a STREAM column first when the snapshot spans several streams.
func snapshotConsumerRows(p *Printer, snap *positions.Snapshot) ([]string, [][]string) {
	multi := len(snap.Streams) > 1
	headers := []string{"CONSUMER", "DELIVERED", "ACK FLOOR", "ACK FLOOR TIME", "PENDING", "ACK PENDING", "ACK RECORDS", "RESTORE TO"}
	if multi {
		headers = append([]string{"STREAM"}, headers...)
	}
	var rows [][]string
	for _, st := range snap.Streams {
		for _, c := range st.Consumers {
			recs := "-"
			if r := c.AckRecords; r != nil {
				recs = fmt.Sprintf("%d (floor %d)", r.Records, r.Floor)
			}
			row := []string{c.Name, u64(c.Delivered.StreamSeq), u64(c.AckFloor.StreamSeq), optTableTime(p, c.AckFloor.Time),
				u64(c.Pending), strconv.Itoa(c.AckPending), recs, u64(c.NextSequence())}
			if multi {
				row = append([]string{st.Name}, row...)
			}
			rows = append(rows, row)
		}
	}
	return headers, rows
}

// snapshotWho is "user@host" of a snapshot, escaped: the document is
// written by whoever may write the bucket or the file, so its text must not
// reach the terminal raw.
func snapshotWho(snap *positions.Snapshot) string {
	return Escape(snap.User + "@" + snap.Host)
}

// signed writes n with its sign ("+12", "-3", "0").
func signed(n int64) string {
	if n > 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// signedDuration writes a duration with its sign, "-" when unknown.
func signedDuration(ns *int64) string {
	if ns == nil {
		return "-"
	}
	d := time.Duration(*ns).Round(time.Millisecond)
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}
