package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// maxInvalidSources bounds the sources remembered as already logged for
// an invalid event: past it, sources are logged again (the log stays
// bounded by the feed's rate, the memory by this).
const maxInvalidSources = 1024

// invalidEvent handles an event that broke the envelope rules
// (aep.ValidateEnvelope): it is counted (Status().Invalid) and logged
// once per source with the rule; an attention.requested still becomes a
// card, read-only, that says which rule it broke. No other invalid event
// changes a card. The caller holds the lock.
func (in *Inbox) invalidEvent(e *aep.Event, err error) {
	in.invalid++
	if !in.invalidLogged.has(e.Source()) {
		in.invalidLogged.put(e.Source(), struct{}{})
		in.opts.Logger.Warn("inbox: an event breaks the AEP envelope rules: a request is shown malformed, anything else changes no card (logged once per source)",
			"source", e.Source(), "type", e.Type(), "id", e.ID(), "rule", err.Error())
	}
	if e.Type() == "attention.requested" {
		in.onRequested(e, err)
	}
}

// envelopeWords says, in the operator's words, which envelope rules an
// event broke: at most three, then how many more.
func envelopeWords(e *aep.Event, err error) string {
	var rules []string
	for _, one := range flatten(err) {
		var ve *aep.ValidationError
		if errors.As(one, &ve) {
			rules = append(rules, ruleWords(e, ve))
		} else {
			rules = append(rules, strings.TrimPrefix(one.Error(), "aep: "))
		}
	}
	if len(rules) == 0 {
		return "the event breaks the AEP envelope rules"
	}
	const shown = 3
	more := ""
	if len(rules) > shown {
		more = fmt.Sprintf("; and %d more", len(rules)-shown)
		rules = rules[:shown]
	}
	return strings.Join(rules, "; ") + more
}

// flatten lists the errors joined in err (errors.Join), or err alone.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// attrWords names the envelope attributes as an operator reads them.
var attrWords = map[string]string{
	"aep":         "AEP version",
	"id":          "event id",
	"type":        "event type",
	"time":        "time",
	"source":      "source",
	"agent":       "agent name",
	"session":     "session",
	"seq":         "sequence number (seq)",
	"epoch":       "epoch",
	"severity":    "severity",
	"capture":     "capture level",
	"traceparent": "trace context (traceparent)",
	"data":        "data",
}

// ruleWords says one broken envelope rule in the operator's words.
func ruleWords(e *aep.Event, ve *aep.ValidationError) string {
	name, ok := attrWords[ve.Attr]
	if !ok {
		name = fmt.Sprintf("attribute %q", ve.Attr)
	}
	if ve.Rule == "is required" {
		return "it has no " + name
	}
	switch ve.Attr {
	case "aep":
		if e.AEP() != "" && e.AEP() != aep.Version {
			return fmt.Sprintf("it is written for AEP version %q; this inbox reads AEP %s", e.AEP(), aep.Version)
		}
	case "time":
		if strings.HasPrefix(ve.Rule, "must be an RFC 3339") {
			return fmt.Sprintf("its time %q is not a date and time with a time zone", e.Time())
		}
	case "seq", "epoch":
		if strings.HasSuffix(ve.Rule, ">= 0") {
			return "its " + name + " is negative"
		}
	}
	return "its " + name + " " + ve.Rule
}

// decodeWords says why a payload did not decode, in the operator's words
// (never a Go type name): `"fields" is not a list (it is text)`.
func decodeWords(what string, err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		where := what
		if te.Field != "" {
			where = fmt.Sprintf("%q", te.Field)
		}
		want, got := kindWords(te.Type), jsonWords(te.Value)
		if got == "a number" && strings.HasSuffix(want, "in range") {
			return where + " is a number out of range"
		}
		return fmt.Sprintf("%s is not %s (it is %s)", where, want, got)
	case errors.As(err, &se):
		return what + " is not valid JSON"
	}
	return what + " cannot be read"
}

// kindWords names what a Go type holds, as JSON an agent would write.
func kindWords(t reflect.Type) string {
	if t == nil {
		return "of the right kind"
	}
	if t == reflect.TypeFor[json.Number]() {
		return "a number"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number in range"
	case reflect.Pointer:
		return kindWords(t.Elem())
	}
	return "of the right kind"
}

// jsonWords names the JSON value an UnmarshalTypeError reports ("string",
// "number 1e400", "array", ...).
func jsonWords(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "string":
		return "text"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "null":
		return "null"
	}
	return "something else"
}
