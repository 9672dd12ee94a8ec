package commands

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/jsctl/jsctl/jsutil"
)

// helpTopics returns the texts of "jsctl help TOPIC": the contracts a user
// looks up while typing a command, short; docs/ holds the full pages.
func helpTopics() map[string]string {
	return map[string]string{
		"times": `Times (everywhere a time is accepted: seek, --to-time, --since, --until,
--until of pause):

  RFC 3339             "2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5+01:00"
  date and time        "2026-11-29 10:00:05", "2026-11-29 10:00", "2026-11-29"
  clock time, today    "10:00:05"
  Unix time            "1795946400", "@1795946400" (seconds, milliseconds,
                       microseconds or nanoseconds, by magnitude)
  relative to now      "now", "-90m", "2h ago", "now-1d12h", "1d"

Dates and clock times without an offset are read in --tz (default: the local
zone; JSCTL_TZ sets it too). Times are printed in --tz as well; --json prints
RFC 3339 UTC. Tables print short times (14:31:38.604 today, the date added
otherwise); --wide prints full precision (nanoseconds and zone), as views of one
object (seek, consumer info) do. Sub-second input is honoured. A time that
cannot be read is exit code 2 naming these forms.

Full page: docs/times.md.`,

		"handler": consumeHandlerHelp,

		"exit-codes": exitCodesHelp + `

Full page: docs/exit-codes.md.`,

		"connecting": `Connecting (every command; flags override environment variables, which override a context):

  -s, --server URL      NATS_URL        server URLs, comma separated (default ` + jsutil.DefaultURL + `)
  --context NAME        NATS_CONTEXT    a nats CLI context (~/.config/nats/context/NAME.json);
                                        without one, the nats CLI's selected context is used
  --creds FILE          NATS_CREDS      user credentials (JWT and seed)
  --nkey FILE           NATS_NKEY       NKEY seed file
  --user, --password    NATS_USER, NATS_PASSWORD
  --token TOKEN         NATS_TOKEN
  --tlscert, --tlskey, --tlsca FILE     client certificate, key, and certificate authority
  --timeout D           NATS_TIMEOUT    connect and per-request wait (default 5s)
  --js-domain D         NATS_JS_DOMAIN  JetStream domain (leaf nodes, hubs)
  --embedded DIR        JSCTL_EMBEDDED  an in-process server over store DIR (no network)

Secrets are never printed: URLs' user information, passwords and tokens are masked in
errors. A refused connection is exit code 4, a refused login exit code 7.
Full page: docs/connecting.md.`,

		"permissions": `Permissions: jsctl honours the server's permissions and reports a refusal with exit
code 7, naming the operation and the subject the server refused. Every command needs to
subscribe to its inbox (_INBOX.> unless the context sets another prefix) and to publish
JetStream API requests for what it reads or changes ($JS.API.STREAM.INFO.<stream>,
$JS.API.CONSUMER.INFO.<stream>.<consumer>, ...). jsctl keeps its own state in KV buckets:

  JSCTL_ACKS            ack records (consume, acks, reset --forget-acks, check --failed-records-*)
  JSCTL_RESET_INTENTS   unfinished consumer changes (reset, restore, recover, pause)
  JSCTL_RESET_HISTORY   recorded consumer changes (reset --to-previous, consumer history)
  JSCTL_SNAPSHOTS       saved consumer positions (consumer snapshot)

The subjects each command publishes to, measured from the commands themselves, are
listed per command in docs/permissions.md.`,
	}
}

// helpArgs turns "jsctl", "jsctl help" and "jsctl help COMMAND..." into
// a request for help; topic is set for "jsctl help TOPIC".
func helpArgs(args []string) (out []string, topic string) {
	switch {
	case len(args) == 0:
		return []string{"--help"}, ""
	case args[0] != "help":
		return args, ""
	case len(args) == 2 && helpTopics()[args[1]] != "":
		return nil, args[1]
	}
	return append(append([]string{}, args[1:]...), "--help"), ""
}

// topicNames are the help topics, in the order "jsctl help" lists them.
func topicNames() []string {
	return []string{"times", "exit-codes", "connecting", "permissions", "handler"}
}

// unknownHelpWord is the word after "help" (args as helpArgs left them:
// "help X ..." became "X ... --help") that is neither a command nor a
// topic, or "".
func unknownHelpWord(app *kong.Application, args []string) string {
	if len(args) < 2 || args[len(args)-1] != "--help" || strings.HasPrefix(args[0], "-") {
		return ""
	}
	for _, c := range app.Children {
		if !c.Hidden && (c.Name == args[0] || slices.Contains(c.Aliases, args[0])) {
			return ""
		}
	}
	return args[0]
}

// printTopic prints a help topic fitted to width columns.
func printTopic(w io.Writer, topic string, width int) error {
	_, err := fmt.Fprintln(w, fitLines(strings.TrimSpace(helpTopics()[topic]), width))
	return err
}
