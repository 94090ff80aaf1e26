package aep

import "fmt"

// ValidationError names the attribute (or payload path) and the rule an
// event broke.
type ValidationError struct {
	Attr string // attribute name or JSON path, e.g. "seq", "data.fields[1].choices"
	Rule string // the rule in words, e.g. "must be omitted on control.attention.respond"
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("aep: %s: %s", e.Attr, e.Rule)
}
