package aep

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with an answer's values. Field is the field id
// (for an unknown key, the key itself); "" means the answer as a whole.
// Code is stable and machine-readable (the Problem* constants); Message is
// plain words for the operator, written to sit beside the field.
type Problem struct {
	Field   string
	Code    string
	Message string
}

// Problem codes. ValidateValues reports only ProblemRequired and
// ProblemNotAChoice (the spec's MUST-reject rule); CheckValues reports all.
const (
	ProblemRequired    = "required"     // a required field has no value
	ProblemNotAChoice  = "not_a_choice" // a select without other got a string that is no choice id
	ProblemNotNumber   = "not_a_number"
	ProblemOutOfRange  = "out_of_range"
	ProblemNotBoolean  = "not_a_boolean"
	ProblemNotString   = "not_a_string"
	ProblemNotArray    = "not_an_array" // multi select answered with a single value
	ProblemNotSingle   = "not_single"   // single select answered with a list
	ProblemUnknownKey  = "unknown_field"
	ProblemBlank       = "blank"     // required text (or Other text) that is empty or only spaces
	ProblemDuplicate   = "duplicate" // the same entry twice in a multi select
	ProblemUnknownType = "unknown_type"
)

// ValidateValues applies exactly the rule an emitter MUST enforce on a
// control.attention.respond (AEP-0006, AEP-0002 §5.3): every required field
// has a key in v, and a select field without other:true carries no string
// (or, for an array, no string element) that is not one of its choice ids.
// It is never stricter than that (types, ranges, unknown keys and duplicates
// are CheckValues' business), so it is safe for judging other parties.
// Problems come in field order, at most one per field; nil means v passes.
func ValidateValues(fields []FieldSpec, v Values) []Problem {
	var out []Problem
	for _, f := range fields {
		val, ok := v[f.ID]
		if !ok {
			if f.Required {
				out = append(out, requiredProblem(f))
			}
			continue
		}
		if f.Type == FieldSelect && !f.Other {
			if p, bad := nonChoiceString(f, val); bad {
				out = append(out, p)
			}
		}
	}
	return out
}

// nonChoiceString reports a string (or string element) of val that is not a
// choice id of the select field f.
func nonChoiceString(f FieldSpec, val any) (Problem, bool) {
	switch x := val.(type) {
	case string:
		if !f.HasChoice(x) {
			return notAChoice(f), true
		}
	case []any:
		for _, el := range x {
			if s, ok := el.(string); ok && !f.HasChoice(s) {
				return notAChoice(f), true
			}
		}
	case []string:
		for _, s := range x {
			if !f.HasChoice(s) {
				return notAChoice(f), true
			}
		}
	}
	return Problem{}, false
}

// CheckValues is the UI's own check before it sends an answer: everything
// ValidateValues reports, and also that a number is a JSON number within
// min/max, a boolean is a boolean, a string field holds a string, a multi
// select holds an array of distinct strings, a single select holds one
// string, no key names a field the form lacks, and required text (and any
// Other text) is not blank. These rules are the UI's, never used to judge
// what other parties put on the wire. Problems come in field order (unknown
// keys last, sorted), at most one per field.
func CheckValues(fields []FieldSpec, v Values) []Problem {
	var out []Problem
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.ID] = true
		val, ok := v[f.ID]
		if !ok {
			if f.Required {
				out = append(out, requiredProblem(f))
			}
			continue
		}
		if p, bad := checkValue(f, val); bad {
			out = append(out, p)
		}
	}
	var unknown []string
	for k := range v {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		out = append(out, Problem{Field: k, Code: ProblemUnknownKey,
			Message: "This answer names a field the form does not have"})
	}
	return out
}

func checkValue(f FieldSpec, val any) (Problem, bool) {
	switch f.Type {
	case FieldString:
		s, ok := val.(string)
		if !ok {
			return Problem{f.ID, ProblemNotString, "Enter text"}, true
		}
		if f.Required && strings.TrimSpace(s) == "" {
			return requiredProblem(f), true
		}
	case FieldNumber:
		n, ok := numberOf(val)
		if !ok {
			return Problem{f.ID, ProblemNotNumber, numberMessage(f)}, true
		}
		if (f.Min != nil && n < *f.Min) || (f.Max != nil && n > *f.Max) {
			return Problem{f.ID, ProblemOutOfRange, numberMessage(f)}, true
		}
	case FieldBoolean:
		if _, ok := val.(bool); !ok {
			return Problem{f.ID, ProblemNotBoolean, "Answer yes or no"}, true
		}
	case FieldSelect:
		return checkSelect(f, val)
	default:
		return Problem{f.ID, ProblemUnknownType, "This field has a type this form cannot answer"}, true
	}
	return Problem{}, false
}

func checkSelect(f FieldSpec, val any) (Problem, bool) {
	if !f.Multi {
		s, ok := val.(string)
		if !ok {
			if isList(val) {
				return Problem{f.ID, ProblemNotSingle, "Choose only one option"}, true
			}
			return Problem{f.ID, ProblemNotAChoice, chooseMessage(f)}, true
		}
		return checkEntry(f, s)
	}
	list, ok := stringList(val)
	if !ok {
		if _, isStr := val.(string); isStr || !isList(val) {
			return Problem{f.ID, ProblemNotArray, "Choose options from the list"}, true
		}
		return Problem{f.ID, ProblemNotAChoice, chooseMessage(f)}, true
	}
	if f.Required && len(list) == 0 {
		return Problem{f.ID, ProblemRequired, "Choose at least one option"}, true
	}
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if seen[s] {
			return Problem{f.ID, ProblemDuplicate, "Each option can be chosen only once"}, true
		}
		seen[s] = true
		if p, bad := checkEntry(f, s); bad {
			return p, true
		}
	}
	return Problem{}, false
}

// checkEntry checks one selected string: a choice id, or Other text.
func checkEntry(f FieldSpec, s string) (Problem, bool) {
	if f.HasChoice(s) {
		return Problem{}, false
	}
	if !f.Other {
		return notAChoice(f), true
	}
	if strings.TrimSpace(s) == "" {
		return Problem{f.ID, ProblemBlank, "Type your other answer, or choose an option"}, true
	}
	return Problem{}, false
}

func requiredProblem(f FieldSpec) Problem {
	msg := "This field is required"
	switch f.Type {
	case FieldString:
		msg = "Enter a value"
	case FieldNumber:
		msg = numberMessage(f)
	case FieldBoolean:
		msg = "Answer yes or no"
	case FieldSelect:
		if f.Multi {
			msg = "Choose at least one option"
		} else {
			msg = "Choose an option"
		}
	}
	return Problem{Field: f.ID, Code: ProblemRequired, Message: msg}
}

func notAChoice(f FieldSpec) Problem {
	return Problem{Field: f.ID, Code: ProblemNotAChoice, Message: chooseMessage(f)}
}

func chooseMessage(f FieldSpec) string {
	if f.Multi {
		return "Choose options from the list"
	}
	return "Choose one of the listed options"
}

// numberMessage states the field's range, e.g. "Enter a number between 0.5 and 2500".
func numberMessage(f FieldSpec) string {
	switch {
	case f.Min != nil && f.Max != nil:
		return "Enter a number between " + formatNumber(*f.Min) + " and " + formatNumber(*f.Max)
	case f.Min != nil:
		return "Enter a number of at least " + formatNumber(*f.Min)
	case f.Max != nil:
		return "Enter a number no greater than " + formatNumber(*f.Max)
	}
	return "Enter a number"
}

func formatNumber(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// numberOf reads a JSON number (json.Number as decoded by this package, or a
// Go number built by a caller). NaN and infinities are not JSON numbers.
func numberOf(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		f = x
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case int32:
		f = float64(n)
	case uint:
		f = float64(n)
	case uint64:
		f = float64(n)
	case uint32:
		f = float64(n)
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func isList(v any) bool {
	switch v.(type) {
	case []any, []string:
		return true
	}
	return false
}

// stringList returns v as a list of strings when it is a list holding only strings.
func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, el := range x {
			s, ok := el.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// AnswerCapture is the capture level a control.attention.respond carrying a
// must declare (NOTES §5): metadata when the answer holds only an option
// id, choice ids, numbers and booleans; full as soon as it holds operator
// text (answer.text, a string field's value, Other text on a select, or a
// string under a key no field declares). Never redacted: that would claim
// the text passed the redaction pipeline, and redacting the operator's words
// would change what the agent receives.
func AnswerCapture(a Answer, fields []FieldSpec) Capture {
	if a.Text != nil {
		return CaptureFull
	}
	for k, val := range a.Values {
		if valueIsText(fieldByID(fields, k), val) {
			return CaptureFull
		}
	}
	return CaptureMetadata
}

// valueIsText reports whether val is user-authored text for field f (nil f:
// a key no field declares).
func valueIsText(f *FieldSpec, val any) bool {
	switch x := val.(type) {
	case string:
		return f == nil || f.Type != FieldSelect || !f.HasChoice(x)
	case []any:
		for _, el := range x {
			if valueIsText(f, el) {
				return true
			}
		}
	case []string:
		for _, el := range x {
			if valueIsText(f, el) {
				return true
			}
		}
	case map[string]any:
		return true
	}
	return false
}

func fieldByID(fields []FieldSpec, id string) *FieldSpec {
	for i := range fields {
		if fields[i].ID == id {
			return &fields[i]
		}
	}
	return nil
}
