package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotLsCmd lists saved snapshots.
type ConsumerSnapshotLsCmd struct {
	Stream string `arg:"" optional:"" predictor:"stream" help:"Only snapshots holding consumers of this stream."`
}

// Help is the long help of consumer snapshot ls.
func (ConsumerSnapshotLsCmd) Help() string {
	return `Lists the snapshots in the KV bucket JSCTL_SNAPSHOTS, oldest first: name, when and
by whom each was taken, its streams, how many consumers it holds and its description.

--json prints [{"name","description","created","user","host","version","streams",
"consumers":[{"stream","consumer"}]}]. A snapshot's name is its key in the
bucket: a document that names itself otherwise is listed under its key, with
a warning on stderr ("document_name" holds the name it gives itself). A
record that is not a snapshot document jsctl can use is reported on stderr
and skipped.

Examples:
  jsctl consumer snapshot ls
  jsctl consumer snapshot ls ORDERS --json`
}

// snapshotSummary is one snapshot in --json output.
type snapshotSummary struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Created     time.Time          `json:"created"`
	User        string             `json:"user"`
	Host        string             `json:"host"`
	Version     int                `json:"version"`
	Streams     []string           `json:"streams"`
	Consumers   []positions.Target `json:"consumers"`
	// NamedAs is the name a stored document gives itself where it is not
	// its key (name): it is listed, shown and restored by its key.
	NamedAs string `json:"document_name,omitempty"`
}

// Run lists the snapshots.
func (c *ConsumerSnapshotLsCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	snaps, bad, err := positions.ListChecked(ctx, cl.JS, c.Stream, positionsOptions(env, ""))
	if err != nil {
		return err
	}
	warnSkipped(env, bad)
	warnNamedAs(env, snaps)
	if p.JSON {
		out := make([]snapshotSummary, 0, len(snaps))
		for _, s := range snaps {
			sum := snapshotSummary{Name: s.Name, Description: s.Description, Created: s.Created, User: s.User, Host: s.Host,
				Version: s.Version, Streams: s.StreamNames(), Consumers: []positions.Target{}, NamedAs: s.NamedAs}
			for _, st := range s.Streams {
				for _, cs := range st.Consumers {
					sum.Consumers = append(sum.Consumers, positions.Target{Stream: st.Name, Consumer: cs.Name})
				}
			}
			out = append(out, sum)
		}
		return p.PrintJSON(out)
	}
	if len(snaps) == 0 && bucketMissing(ctx, cl.JS, positions.Bucket) {
		p.Printf("%s", missingText("snapshots", positions.Bucket))
		return nil
	}
	if len(snaps) == 0 {
		if c.Stream != "" {
			p.Printf("No snapshots of stream %s.\n", c.Stream)
		} else {
			p.Printf("No snapshots.\n")
		}
		return nil
	}
	rows := make([][]string, 0, len(snaps))
	for _, s := range snaps {
		rows = append(rows, []string{s.Name, p.TableTime(s.Created), strings.Join(s.StreamNames(), ","), strconv.Itoa(s.Consumers()),
			s.User + "@" + s.Host, PreviewCell([]byte(s.Description), 60)})
	}
	return p.Table([]string{"NAME", "CREATED", "STREAMS", "CONSUMERS", "BY", "DESCRIPTION"}, rows, wideOnly("BY"), cutToFit("DESCRIPTION", "STREAMS"))
}

// warnNamedAs tells people, on stderr, about stored snapshot documents
// that name themselves otherwise than their key (they are taken by their
// key).
func warnNamedAs(env *Env, snaps []*positions.Snapshot) {
	for _, s := range snaps {
		if w := s.NameWarning(positions.Bucket); w != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", Escape(w))
		}
	}
}
