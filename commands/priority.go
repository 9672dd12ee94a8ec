package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
)

// priorityText says what a change does, or did, about the consumer's
// priority groups and pinned clients: "policy pinned_client (pinned TTL
// 2m0s), group "jobs" pinned to client X since T: kept by the reset in
// place (--unpin releases it)".
func priorityText(c *reset.Change, pr *reset.Priority) string {
	policy := "policy " + pr.Policy
	if pr.PinnedTTLNS > 0 {
		policy += fmt.Sprintf(" (pinned TTL %s)", time.Duration(pr.PinnedTTLNS))
	}
	var groups []string
	pinned := false
	for _, g := range pr.Groups {
		s := "group " + Escape(g.Group)
		if g.PinnedClientID != "" {
			pinned = true
			s += fmt.Sprintf(" pinned to client %s since %s", Escape(g.PinnedClientID), g.PinnedSince.Format(time.RFC3339))
			if g.Unpinned {
				s += " (released)"
			}
		}
		groups = append(groups, s)
	}
	out := policy + ", " + strings.Join(groups, ", ")
	if !pinned {
		return out + "; kept as they are"
	}
	switch {
	case c.Method == reset.Recreate || c.Method == reset.Create:
		return out + "; settings kept, the pin dropped by the recreate (the next pull request of the group is pinned)"
	case pr.Unpin && c.Applied:
		for _, g := range pr.Groups {
			if g.Unpinned {
				return out + "; released after the move (--unpin)"
			}
		}
		return out + "; not released: nobody was pinned any more after the move, or see the warning"
	case pr.Unpin:
		return out + "; kept by the reset in place, then released (--unpin)"
	}
	return out + "; kept by the reset in place (--unpin releases it)"
}
