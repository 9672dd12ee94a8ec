package jsutil

import "strings"

// CheckSubjectFilter refuses a subject filter that the server does not
// accept as a subject, so that no subject can match it: an empty token
// ("orders..eu", a leading or trailing dot), white space, or ">" before the
// last token ("orders.>.eu"). The rules are the server's own, so every
// filter a server holds (a consumer's, a stream's) passes. what names the
// filter in the error ("subject filter", "--subject"); an empty filter,
// which callers take to mean every subject, is not for this function.
func CheckSubjectFilter(what, filter string) error {
	toks := strings.Split(filter, ".")
	for i, t := range toks {
		var why string
		switch {
		case t == "":
			why = "it has an empty token (tokens are separated by single dots)"
		case strings.ContainsAny(t, " \t\r\n\f"):
			why = "it contains white space"
		case t == ">" && i != len(toks)-1:
			why = `">" may only be the last token`
		default:
			continue
		}
		return Errorf(ErrBadInput, "invalid %s %q: %s; for example orders.*.eu or orders.>", what, filter, why)
	}
	return nil
}
