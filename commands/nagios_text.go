package commands

import "strings"

// nagiosName renders a stream or consumer name for Nagios plugin output:
// escaped as Escape does (no line breaks or control characters) and with
// '|', which starts performance data wherever it appears, as \u007c. The
// server accepts '|' in names; Escape never produces one, and a backslash
// in its output is always an escape, so the result reads back exactly.
func nagiosName(name string) string {
	return strings.ReplaceAll(Escape(name), "|", `\u007c`)
}

// nagiosText makes text that is already safe for a terminal (names in it
// escaped, or quoted with %q) safe for a Nagios status or long-text line:
// a '|' in it becomes \u007c and a line break a space.
func nagiosText(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\u007c`)
}
