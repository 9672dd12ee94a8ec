package jsutil

import (
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// KVSubject is the subject a write of key in bucket is published to
// through js (with a JetStream domain, its API prefix first): the subject
// a permissions violation names when the write is refused.
func KVSubject(js jetstream.JetStream, bucket, key string) string {
	if d := js.Options().Domain; d != "" {
		return "$JS." + d + ".API.$KV." + bucket + "." + key
	}
	return "$KV." + bucket + "." + key
}

// describeKVSubject names the write of a KV subject in words (`write key
// "s1" of bucket "JSCTL_SNAPSHOTS"`), or "" when subject is not one.
func describeKVSubject(subject string) string {
	i := strings.Index(subject, "$KV.")
	if i < 0 || i > 0 && !strings.HasSuffix(subject[:i], ".API.") {
		return ""
	}
	bucket, key, ok := strings.Cut(subject[i+len("$KV."):], ".")
	if !ok || bucket == "" || key == "" {
		return ""
	}
	return "write key " + quoteKey(key) + " of bucket " + quoteKey(bucket)
}

func quoteKey(s string) string { return `"` + s + `"` }
