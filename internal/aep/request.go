package aep

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrInvalidRequest marks every error ValidateRequest returns.
var ErrInvalidRequest = errors.New("aep: invalid request")

// ValidateRequest checks the structure of an attention.requested payload
// beyond what its schema says, the way a form renderer and an emitter need
// it: kind present; options with an id and a label and distinct ids; each
// field with an id, a label and a known type, field ids distinct; choices
// only on (and required on) select fields, each with an id and a label,
// distinct ids; multi and other only on select; min and max only on number,
// min not above max. It returns every problem joined (errors.Join), each
// wrapping ErrInvalidRequest and naming the field, or nil.
func ValidateRequest(r Request) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...))
	}
	if r.Kind == "" {
		bad("kind is missing")
	}
	optIDs := make(map[string]bool, len(r.Options))
	for i, o := range r.Options {
		switch {
		case o.ID == "":
			bad("option %d has no id", i+1)
		case optIDs[o.ID]:
			bad("option id %s is used twice", quoteID(o.ID))
		}
		optIDs[o.ID] = true
		if o.Label == "" {
			bad("option %s has no label", quoteID(o.ID))
		}
	}
	fieldIDs := make(map[string]bool, len(r.Fields))
	for i, f := range r.Fields {
		name := "field " + quoteID(f.ID)
		switch {
		case f.ID == "":
			name = fmt.Sprintf("field %d", i+1)
			bad("%s has no id", name)
		case fieldIDs[f.ID]:
			bad("%s: the id is used by an earlier field", name)
		}
		fieldIDs[f.ID] = true
		if f.Label == "" {
			bad("%s has no label", name)
		}
		switch f.Type {
		case FieldString, FieldNumber, FieldBoolean, FieldSelect:
		case "":
			bad("%s has no type", name)
		default:
			bad("%s has unknown type %s (want string, number, boolean or select)", name, quoteID(f.Type))
		}
		if f.Type == FieldSelect {
			if len(f.Choices) == 0 {
				bad("%s is a select without choices", name)
			}
		} else {
			if len(f.Choices) > 0 {
				bad("%s has choices but is not a select", name)
			}
			if f.Multi {
				bad("%s sets multi but is not a select", name)
			}
			if f.Other {
				bad("%s sets other but is not a select", name)
			}
		}
		choiceIDs := make(map[string]bool, len(f.Choices))
		for j, c := range f.Choices {
			switch {
			case c.ID == "":
				bad("%s: choice %d has no id", name, j+1)
			case choiceIDs[c.ID]:
				bad("%s: choice id %s is used twice", name, quoteID(c.ID))
			}
			choiceIDs[c.ID] = true
			if c.Label == "" {
				bad("%s: choice %s has no label", name, quoteID(c.ID))
			}
		}
		if f.Type != FieldNumber && (f.Min != nil || f.Max != nil) {
			bad("%s sets min or max but is not a number", name)
		}
		if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
			bad("%s has min %s above max %s", name, formatNumber(*f.Min), formatNumber(*f.Max))
		}
	}
	return errors.Join(errs...)
}

// quotedRunes is how much of an agent's id a validation message quotes.
const quotedRunes = 64

// quoteID is id quoted as %q does, up to quotedRunes characters (a longer
// one cut with "…"): a message about a request never grows with the
// length of the ids in it.
func quoteID(id string) string {
	n, i := 0, 0
	for i < len(id) && n < quotedRunes {
		_, w := utf8.DecodeRuneInString(id[i:])
		i += w
		n++
	}
	if i < len(id) {
		return strconv.Quote(id[:i]) + "…"
	}
	return strconv.Quote(id)
}
