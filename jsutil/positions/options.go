package positions

import (
	"regexp"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// Options tune the functions of this package. The zero value is usable.
type Options struct {
	// Timeout bounds each request to the server (default 5s).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// AcksBucket is the ack-record bucket (default acks.DefaultBucket).
	AcksBucket string
	// SnapshotBucket is the bucket that holds snapshots (default Bucket).
	SnapshotBucket string
	// User and Host are recorded in snapshots (defaults: the OS user and
	// host name).
	User, Host string
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SnapshotBucket == "" {
		o.SnapshotBucket = Bucket
	}
	return o
}

// withWho fills in User and Host, for the documents that record them.
func (o Options) withWho() Options {
	o.User, o.Host = jsutil.Who(o.User, o.Host)
	return o
}

// checkName refuses a stream or consumer name that cannot be part of an API
// subject, before anything is sent (the server would never answer).
func checkName(kind, name string) error {
	if why := jsutil.NameProblem(name); why != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "invalid %s name %q: %s", kind, name, why)
	}
	return nil
}

// snapshotName is the form of a snapshot name: tokens of letters, digits,
// '-' and '_' joined by single dots ("pre-deploy", "v1.4.2").
var snapshotName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// CheckSnapshotName reports whether name can name a snapshot.
func CheckSnapshotName(name string) error {
	if len(name) > 200 || !snapshotName.MatchString(name) {
		return jsutil.Errorf(jsutil.ErrBadInput, "invalid snapshot name %q: use letters, digits, '-' and '_', optionally in parts joined by single dots (at most 200 characters)", name)
	}
	return nil
}
