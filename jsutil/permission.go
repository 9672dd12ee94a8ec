package jsutil

import (
	"fmt"
	"regexp"
	"strings"
)

// deniedPublish finds the subject in the server's report of a denied
// publish ("Permissions Violation for Publish to "SUBJ"").
var deniedPublish = regexp.MustCompile(`(?i)publish to "([^"]+)"`)

// DeniedSubject returns the subject whose publish err (a permissions
// violation the server reported) refused, or "".
func DeniedSubject(err error) string {
	if err == nil {
		return ""
	}
	if m := deniedPublish.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// DeniedError is the error for a JetStream API request that the server's
// permissions refused: it names the operation and the object the request
// was for, then the subject, and wraps ErrPermission. Callers prefix it
// with what they were doing, as Wrap does.
func DeniedError(subject string) error {
	return Errorf(ErrPermission, "permission denied: this user may not %s (the server refused a publish to %q)", DescribeAPISubject(subject), subject)
}

// DescribeAPISubject names, in words, the operation and the object of a
// JetStream API subject ($JS.API.STREAM.INFO.ORDERS is `read stream
// "ORDERS"`), whatever the API prefix (a domain's $JS.D.API., a custom
// prefix). A consumer jsctl makes for a moment (its name starts with
// jsctl_tmp_) is called a temporary consumer, not by its generated name.
func DescribeAPISubject(subject string) string {
	if kv := describeKVSubject(subject); kv != "" {
		return kv
	}
	rest := subject
	if i := strings.Index(rest, "API."); i >= 0 {
		rest = rest[i+len("API."):]
	}
	t := strings.Split(rest, ".")
	at := func(i int) string {
		if i < len(t) {
			return t[i]
		}
		return ""
	}
	stream := fmt.Sprintf("stream %q", at(2))
	consumer := func(i int) string {
		if c := at(i); c != "" && !strings.HasPrefix(c, TempConsumerPrefix) {
			return fmt.Sprintf("consumer %q", c)
		}
		return "a temporary consumer"
	}
	switch op := at(0) + "." + at(1); op {
	case "STREAM.INFO":
		return "read " + stream
	case "STREAM.MSG":
		if at(2) == "GET" {
			return fmt.Sprintf("get messages of stream %q", at(3))
		}
		return fmt.Sprintf("delete messages of stream %q", at(3))
	case "STREAM.NAMES", "STREAM.LIST":
		return "list streams"
	case "STREAM.CREATE", "STREAM.UPDATE", "STREAM.DELETE", "STREAM.PURGE":
		return strings.ToLower(at(1)) + " " + stream
	case "CONSUMER.CREATE":
		return "create " + consumer(3) + " on " + stream
	case "CONSUMER.DURABLE":
		return fmt.Sprintf("create consumer %q on stream %q", at(4), at(3))
	case "CONSUMER.INFO":
		return "read " + consumer(3) + " of " + stream
	case "CONSUMER.DELETE":
		return "delete " + consumer(3) + " of " + stream
	case "CONSUMER.RESET":
		return "reset " + consumer(3) + " of " + stream
	case "CONSUMER.PAUSE":
		return "pause " + consumer(3) + " of " + stream
	case "CONSUMER.NAMES", "CONSUMER.LIST":
		return "list the consumers of " + stream
	case "CONSUMER.MSG":
		return fmt.Sprintf("fetch from consumer %q of stream %q", at(4), at(3))
	case "DIRECT.GET":
		return "get messages of " + stream
	}
	if strings.HasPrefix(rest, "INFO") {
		return "read the account's JetStream information"
	}
	return "use the JetStream API (" + rest + ")"
}

// TempConsumerPrefix starts the name of every consumer that jsctl creates
// for a moment (to count messages) and deletes again; one left behind by a
// killed jsctl is recognisable by it, and is removed by the server after a
// few seconds of inactivity.
const TempConsumerPrefix = "jsctl_tmp_"
