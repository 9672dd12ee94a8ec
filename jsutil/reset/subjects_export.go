package reset

// IntersectSubjects returns the subject filter that matches exactly the
// subjects both filters a and b match ('*' one token, '>' one or more at
// the end); ok is false when no subject matches both. a is within b when
// the result is a.
func IntersectSubjects(a, b string) (string, bool) { return intersectSubjects(a, b) }
