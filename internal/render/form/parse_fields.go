package form

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
)

// parseField reads field i of the form into values (or leaves it out) and
// reports the field's problem, if any, with ok false.
// An Other text read as a choice is added to readings.
func parseField(i int, f aep.FieldSpec, form url.Values, values aep.Values, readings *[]OtherReading) (p aep.Problem, ok bool) {
	name := FieldName(i)
	problem := func(code, msg string) (aep.Problem, bool) {
		return aep.Problem{Field: f.ID, Code: code, Message: msg}, false
	}
	switch f.Type {
	case aep.FieldString:
		text := form.Get(name)
		if !utf8.ValidString(text) {
			return problem(CodeNotText, notTextMessage)
		}
		if strings.TrimSpace(text) == "" {
			if f.Required {
				if text != "" {
					return problem(aep.ProblemRequired, "Enter an answer: spaces alone are not one")
				}
				return problem(aep.ProblemRequired, "Enter an answer")
			}
			return aep.Problem{}, true
		}
		values[f.ID] = text
	case aep.FieldNumber:
		n, code, ok := parseNumber(f, form.Get(name))
		if !ok {
			return problem(code, numberProblemMessage(f, code))
		}
		if n != "" {
			values[f.ID] = n
		}
	case aep.FieldBoolean:
		_, checked := form[name]
		values[f.ID] = checked
	case aep.FieldSelect:
		if f.Multi {
			return parseMulti(i, f, form, values, readings)
		}
		return parseSingle(i, f, form, values, readings)
	default:
		if f.Required {
			return problem(aep.ProblemUnknownType, "This question is of a type this page cannot show, so the form cannot be answered here")
		}
	}
	return aep.Problem{}, true
}

// parseNumber reads a number field's text: "" (left out) when blank and
// optional, else a JSON number within the field's range. code says what is
// wrong when ok is false.
func parseNumber(f aep.FieldSpec, raw string) (n json.Number, code string, ok bool) {
	s := strings.TrimSpace(raw)
	if s == "" {
		if f.Required {
			return "", aep.ProblemRequired, false
		}
		return "", "", true
	}
	s = htmlFloatToJSON(s)
	if !isJSONNumber(s) {
		return "", aep.ProblemNotNumber, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return "", CodeTooLarge, false
		}
		return "", aep.ProblemNotNumber, false
	}
	if (f.Min != nil && v < *f.Min) || (f.Max != nil && v > *f.Max) {
		return "", aep.ProblemOutOfRange, false
	}
	return json.Number(s), "", true
}

// numberProblemMessage says what to enter in a number field, in the words of its
// range when it has one ("Enter a number between 0.5 and 2500").
func numberProblemMessage(f aep.FieldSpec, code string) string {
	switch {
	case f.Min != nil && f.Max != nil:
		return "Enter a number between " + formatBound(f.Min) + " and " + formatBound(f.Max)
	case f.Min != nil:
		return "Enter a number of at least " + formatBound(f.Min)
	case f.Max != nil:
		return "Enter a number no greater than " + formatBound(f.Max)
	case code == CodeTooLarge:
		return "Enter a smaller number: this one is too large to send"
	default:
		return "Enter a number, like 3 or 2.5"
	}
}

// htmlFloatToJSON rewrites the forms a browser's number input accepts but
// JSON does not (HTML "valid floating-point number": ".5", "-.5", "007")
// into JSON's grammar ("0.5", "-0.5", "7"), so nothing the browser lets
// through is refused for its spelling. Anything else is returned as is.
func htmlFloatToJSON(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, rest := s, ""
	if i := strings.IndexAny(s, ".eE"); i >= 0 {
		intPart, rest = s[:i], s[i:]
	}
	if strings.HasPrefix(rest, ".") && intPart == "" {
		intPart = "0"
	}
	if len(intPart) > 1 {
		trimmed := strings.TrimLeft(intPart, "0")
		if trimmed == "" {
			trimmed = "0"
		}
		if strings.Trim(intPart, "0123456789") == "" {
			intPart = trimmed
		}
	}
	return sign + intPart + rest
}

// isJSONNumber reports whether s follows the JSON number grammar (RFC 8259
// §6): -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// selectPost is what the form posted for a select field.
type selectPost struct {
	indexes     []int  // chosen choice indexes, distinct, in post order
	otherPicked bool   // the Other radio/checkbox was chosen
	otherText   string // the Other text as typed ("" when the field has no Other)
	bad         bool   // a value that is neither a choice index nor (with Other) "other"
}

// otherTyped reports whether the operator typed an Other answer (spaces
// alone are not one).
func (s selectPost) otherTyped() bool { return strings.TrimSpace(s.otherText) != "" }

func readSelect(i int, f aep.FieldSpec, form url.Values) selectPost {
	var s selectPost
	for _, v := range distinctNonEmpty(form[FieldName(i)]) {
		if f.Other && v == ValueOther {
			s.otherPicked = true
			continue
		}
		j, ok := parseIndex(v, len(f.Choices))
		if !ok {
			s.bad = true
			continue
		}
		s.indexes = append(s.indexes, j)
	}
	if f.Other {
		s.otherText = form.Get(OtherName(i))
	}
	return s
}

// parseSingle reads a single select: the chosen choice's id, or the Other
// text. Typing Other text with nothing chosen counts as choosing Other;
// typing it beside another choice is a conflict to point out, never a
// silent drop. Other text is never sent as a choice the operator did not
// see (readOther): equal to a choice's label it is sent as that choice
// (and noted in readings), equal to a choice's id it is refused.
func parseSingle(i int, f aep.FieldSpec, form url.Values, values aep.Values, readings *[]OtherReading) (aep.Problem, bool) {
	s := readSelect(i, f, form)
	problem := func(code, msg string) (aep.Problem, bool) {
		return aep.Problem{Field: f.ID, Code: code, Message: msg}, false
	}
	if !utf8.ValidString(s.otherText) {
		return problem(CodeNotText, notTextMessage)
	}
	var as otherMatch
	if s.otherTyped() && !s.bad {
		as = readOther(f, s.otherText)
		switch {
		case as.problem != nil:
			p := *as.problem
			p.Field = f.ID
			return p, false
		case as.label && (len(s.indexes) == 0 || (len(s.indexes) == 1 && s.indexes[0] == as.choice && !s.otherPicked)):
			// The Other text names a choice (the one picked, if any):
			// send that choice, and say so.
			values[f.ID] = f.Choices[as.choice].ID
			*readings = append(*readings, OtherReading{Field: f.ID, Text: s.otherText, Choice: f.Choices[as.choice]})
			return aep.Problem{}, true
		}
	}
	switch {
	case s.bad:
		return problem(aep.ProblemNotAChoice, "Choose one of the options")
	case len(s.indexes) > 1:
		return problem(aep.ProblemNotSingle, "Choose only one of the options")
	case len(s.indexes) == 1 && (s.otherTyped() || s.otherPicked):
		c := f.Choices[s.indexes[0]]
		if s.otherTyped() {
			return problem(CodeOtherConflict, "Choose either "+quoteInMessage(choiceInMessage(c))+" or your Other answer "+quoteInMessage(s.otherText)+", not both")
		}
		return problem(CodeOtherConflict, "Choose either "+quoteInMessage(choiceInMessage(c))+" or Other, not both")
	case len(s.indexes) == 1:
		values[f.ID] = f.Choices[s.indexes[0]].ID
	case s.otherTyped():
		values[f.ID] = s.otherText
	case s.otherPicked:
		return problem(aep.ProblemBlank, "Type your answer under Other, or choose one of the options")
	case f.Required:
		return problem(aep.ProblemRequired, "Choose one of the options")
	}
	return aep.Problem{}, true
}

// parseMulti reads a multi select: the chosen ids in choice order (not post
// order), each once, then the Other text as one more element when typed
// (typing it counts as ticking Other). Nothing chosen is []. The Other
// entry follows parseSingle's rule: a choice's label is sent as that choice
// (folded into it when it is ticked too), a choice's id is refused.
func parseMulti(i int, f aep.FieldSpec, form url.Values, values aep.Values, readings *[]OtherReading) (aep.Problem, bool) {
	s := readSelect(i, f, form)
	problem := func(code, msg string) (aep.Problem, bool) {
		return aep.Problem{Field: f.ID, Code: code, Message: msg}, false
	}
	if s.bad {
		return problem(aep.ProblemNotAChoice, "Choose from the options shown")
	}
	if !utf8.ValidString(s.otherText) {
		return problem(CodeNotText, notTextMessage)
	}
	if s.otherPicked && !s.otherTyped() {
		return problem(aep.ProblemBlank, "Type your answer under Other, or untick Other")
	}
	chosen := make([]bool, len(f.Choices))
	for _, j := range s.indexes {
		chosen[j] = true
	}
	otherText := s.otherTyped()
	if otherText {
		as := readOther(f, s.otherText)
		switch {
		case as.problem != nil:
			p := *as.problem
			p.Field = f.ID
			return p, false
		case as.label:
			chosen[as.choice] = true
			otherText = false
			*readings = append(*readings, OtherReading{Field: f.ID, Text: s.otherText, Choice: f.Choices[as.choice]})
		}
	}
	list := make([]any, 0, len(s.indexes)+1)
	for j, c := range f.Choices {
		if chosen[j] {
			list = append(list, c.ID)
		}
	}
	if otherText {
		list = append(list, s.otherText)
	}
	if len(list) == 0 && f.Required {
		return problem(aep.ProblemRequired, "Choose at least one option")
	}
	values[f.ID] = list
	return aep.Problem{}, true
}

// choiceInMessage is how a message names a choice: its label, or its id
// when the label is empty.
func choiceInMessage(c aep.Choice) string {
	if strings.TrimSpace(c.Label) != "" {
		return c.Label
	}
	return c.ID
}

// quoteInMessageMax is the most runes of quoted text a message carries.
const quoteInMessageMax = 60

// quoteInMessage sets text inside a message apart in typographic quotes, on
// one line (runs of white space, line breaks included, become one space), cut
// to quoteInMessageMax runes with an ellipsis. HTML escaping is the
// renderer's job.
func quoteInMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > quoteInMessageMax {
		r := []rune(s)
		s = string(r[:quoteInMessageMax]) + "…"
	}
	return "“" + s + "”"
}
