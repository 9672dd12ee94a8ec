package acks

import (
	"strings"

	"github.com/jsctl/jsctl/jsutil"
)

// validPattern reports whether p is a usable NATS subject pattern: a
// subject the server accepts (jsutil.CheckSubjectFilter) whose wildcards
// are whole tokens.
func validPattern(p string) bool {
	if p == "" || jsutil.CheckSubjectFilter("subject", p) != nil {
		return false
	}
	for _, t := range strings.Split(p, ".") {
		if len(t) > 1 && strings.ContainsAny(t, "*>") {
			return false
		}
	}
	return true
}

// matchAny reports whether subject matches any pattern; no patterns match
// everything.
func matchAny(patterns []string, subject string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if matchSubject(p, subject) {
			return true
		}
	}
	return false
}

func matchSubject(pattern, subject string) bool {
	pt := strings.Split(pattern, ".")
	st := strings.Split(subject, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) || (p != "*" && p != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}
