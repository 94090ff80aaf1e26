package form

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
)

// Problem codes ParseAnswer reports in aep.Problem.Code beside the aep.Problem*
// codes it shares with aep.ValidateValues and aep.CheckValues (required,
// not_a_number, out_of_range, not_a_choice, not_single, blank, unknown_type).
const (
	CodeNotAnswerable  = "not_answerable"  // the request cannot be answered over control from this UI
	CodeNothingChosen  = "nothing_chosen"  // a reply needs an option or text and the post has neither
	CodeBadOption      = "bad_option"      // the option index is not one of the request's options
	CodeTooLarge       = "too_large"       // a JSON number beyond float64 (e.g. 1e400)
	CodeOtherConflict  = "other_conflict"  // a choice picked and Other text typed on a single select
	CodeNotText        = "not_text"        // text that is not valid UTF-8 (JSON would alter it)
	CodeOtherIsChoice  = "other_is_choice" // Other text the agent would read as a choice the operator did not see (its id)
	CodeOtherAmbiguous = "other_ambiguous" // Other text equal to the labels of several choices
	CodeNoteIsOption   = "note_is_option"  // a note sent alone that names an option: the agent would apply that option
)

// notTextMessage is the message of CodeNotText.
const notTextMessage = "This answer holds bytes that are not text; type it again"

// ParseAnswer turns an operator's form post into the answer of a
// control.attention.respond, driven by the request: a kind:"form" request
// with fields is answered with values read through the positional control
// names (FieldName, OtherName; docs/DESIGN.md "The form's wire names"), any
// other request with option and/or text (see AcceptsOption, AcceptsText).
// Keys the request gives the form no control for are ignored, so nothing the
// request does not declare reaches the answer.
//
// Values are checked with aep.ValidateValues (the rule the agent enforces)
// and aep.CheckValues (the UI's stricter checks) after they are built, so an
// answer ParseAnswer lets through is not refused for a reason the UI could
// have seen. Problems come in form order (whole-answer problems first), at
// most one per field, each with a message saying what to do. When there are
// problems the returned answer is the zero Answer: nothing may be sent.
// Whether the request may be answered at all is not asked here: that is
// the domain's rule (inbox.Card.CanAnswer), asked before.
func ParseAnswer(req aep.Request, form url.Values) (aep.Answer, []aep.Problem) {
	ans, _, problems := readAnswer(req, form)
	return ans, problems
}

// OtherReadings returns how ParseAnswer reads the Other text of the post
// as a choice (Other text equal to a choice's label is sent as that
// choice's id), in field order, so the card can say so once the answer is
// sent; nil when none was, or when the post is refused.
func OtherReadings(req aep.Request, form url.Values) []OtherReading {
	_, readings, problems := readAnswer(req, form)
	if len(problems) > 0 {
		return nil
	}
	return readings
}

// readAnswer is ParseAnswer that also returns the Other readings.
func readAnswer(req aep.Request, form url.Values) (aep.Answer, []OtherReading, []aep.Problem) {
	form = unixLineBreaks(form)
	if req.Kind == aep.KindForm && len(req.Fields) > 0 {
		values, readings, problems := parseValues(req.Fields, form)
		if len(problems) > 0 {
			return aep.Answer{}, nil, problems
		}
		return aep.Answer{Values: values}, readings, nil
	}
	ans, problems := parseReply(req, form)
	if len(problems) > 0 {
		return aep.Answer{}, nil, problems
	}
	return ans, nil, nil
}

// AcceptsOption reports whether the request is answered by picking one of
// its options (the "option" control): any request with options but a
// kind:"form" one, whose answer is its values or, without fields, a reply.
func AcceptsOption(req aep.Request) bool {
	return req.Kind != aep.KindForm && len(req.Options) > 0
}

// AcceptsText reports whether the request takes free text (the "text"
// control, AEP-0008): kind input, other, a form without fields, and kinds
// this UI does not know (AEP-0006: rendered as the prompt plus a reply)
// take it as the answer or beside an option. Permission and review
// requests with options take it as a note: beside the option pressed
// (option stays the lossless channel), or alone, for the agent to map
// (text naming an option is that option; on a permission request
// unmatched text is never the permissive choice). An auth request takes
// text only when it offers no options, so every controllable request
// has some way to be answered.
func AcceptsText(req aep.Request) bool {
	switch req.Kind {
	case aep.KindForm:
		return len(req.Fields) == 0
	case aep.KindAuth:
		return len(req.Options) == 0
	default:
		return true
	}
}

// TakesNote reports whether the request's free text is a note to its
// options (permission, review) rather than an answer of its own: the
// form offers it behind "Add a note".
func TakesNote(req aep.Request) bool {
	return (req.Kind == aep.KindPermission || req.Kind == aep.KindReview) && len(req.Options) > 0
}

// parseReply reads the option and text controls of a request answered
// without values.
func parseReply(req aep.Request, form url.Values) (aep.Answer, []aep.Problem) {
	var ans aep.Answer
	offersOption, offersText := AcceptsOption(req), AcceptsText(req)
	if offersOption {
		picked := distinctNonEmpty(form[NameOption])
		switch {
		case len(picked) > 1:
			return ans, []aep.Problem{{Code: CodeBadOption, Message: "Choose only one of the options"}}
		case len(picked) == 1:
			j, ok := parseIndex(picked[0], len(req.Options))
			if !ok {
				return ans, []aep.Problem{{Code: CodeBadOption, Message: "Choose one of the options shown"}}
			}
			ans.Option = req.Options[j].ID
		}
	}
	if offersText {
		t := form.Get(NameText)
		if !utf8.ValidString(t) {
			return ans, []aep.Problem{{Code: CodeNotText, Message: notTextMessage}}
		}
		if strings.TrimSpace(t) != "" {
			ans.Text = &t
		}
	}
	if ans.Option == "" && ans.Text != nil && TakesNote(req) {
		// AEP-0008: the agent reads text alone that names an option as
		// that option. The operator chose "the note only", so a note that
		// is an option's name is not sent as text to be mapped: they
		// press the option itself (option is the lossless channel).
		if o, ok := NamedOption(req.Options, *ans.Text); ok {
			label := o.Label
			if label == "" {
				label = o.ID
			}
			return aep.Answer{}, []aep.Problem{{Code: CodeNoteIsOption,
				Message: "This note names the option “" + label + "”, so the agent would take it as that choice. Press “" + label + "” to choose it, or write more to send a note"}}
		}
	}
	if ans.Option != "" || ans.Text != nil {
		return ans, nil
	}
	p := aep.Problem{Code: CodeNothingChosen}
	switch {
	case TakesNote(req):
		p.Message = "Choose one of the options, or write a note to send on its own"
	case offersOption && offersText:
		p.Message = "Choose one of the options, or type a reply"
	case offersOption:
		p.Message = "Choose one of the options"
	default:
		p.Message = "Type a reply"
	}
	return ans, []aep.Problem{p}
}

// NamedOption returns the option text alone would be read as by the agent
// (AEP-0008): after trimming, case-insensitively equal to an option's id,
// or to exactly one option's label.
func NamedOption(opts []aep.Option, text string) (aep.Option, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return aep.Option{}, false
	}
	for _, o := range opts {
		if strings.EqualFold(t, strings.TrimSpace(o.ID)) {
			return o, true
		}
	}
	var found []aep.Option
	for _, o := range opts {
		if strings.EqualFold(t, strings.TrimSpace(o.Label)) {
			found = append(found, o)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return aep.Option{}, false
}

// parseValues builds answer.values from the form, one field spec at a time,
// then adds the problems of the protocol core's checks.
func parseValues(fields []aep.FieldSpec, form url.Values) (aep.Values, []OtherReading, []aep.Problem) {
	values := make(aep.Values, len(fields))
	var problems []aep.Problem
	var readings []OtherReading
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		if seen[f.ID] {
			return nil, nil, []aep.Problem{{
				Code:    CodeNotAnswerable,
				Message: "This form has two questions with the same id, so it cannot be answered here",
			}}
		}
		seen[f.ID] = true
		if p, ok := parseField(i, f, form, values, &readings); !ok {
			problems = append(problems, p)
		}
	}
	problems = mergeProblems(fields, problems,
		aep.ValidateValues(fields, values), aep.CheckValues(fields, values))
	return values, readings, problems
}

// mergeProblems concatenates problem lists keeping at most one problem per
// field (the first: ParseAnswer's own, which are the most specific) and one
// of each whole-answer problem, ordered as the form is: whole-answer
// problems, then fields in order, then problems naming fields the form does
// not have.
func mergeProblems(fields []aep.FieldSpec, lists ...[]aep.Problem) []aep.Problem {
	pos := make(map[string]int, len(fields))
	for i, f := range fields {
		if _, ok := pos[f.ID]; !ok {
			pos[f.ID] = i
		}
	}
	rank := func(p aep.Problem) int {
		if p.Field == "" {
			return -1
		}
		if i, ok := pos[p.Field]; ok {
			return i
		}
		return len(fields)
	}
	var out []aep.Problem
	seenField := map[string]bool{}
	seenWhole := map[aep.Problem]bool{}
	for _, list := range lists {
		for _, p := range list {
			if p.Field == "" {
				if seenWhole[p] {
					continue
				}
				seenWhole[p] = true
			} else {
				if seenField[p.Field] {
					continue
				}
				seenField[p.Field] = true
			}
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b aep.Problem) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// distinctNonEmpty returns the non-empty strings of vs, first occurrence
// order, each once. An empty value is what a <select>'s "Choose…" entry
// posts: nothing chosen.
func distinctNonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v == "" || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// parseIndex reads a 0-based index below n written canonically ("0", "12";
// not "+1", "01", " 1").
func parseIndex(s string, n int) (int, bool) {
	j, err := strconv.Atoi(s)
	if err != nil || j < 0 || j >= n || strconv.Itoa(j) != s {
		return 0, false
	}
	return j, true
}

// unixLineBreaks returns a copy of form with every CRLF (and lone CR) as
// LF. Browsers submit a textarea's line breaks as CRLF (a form-encoding
// artefact); the agent gets the text as the operator typed it, with "\n".
func unixLineBreaks(form url.Values) url.Values {
	out := make(url.Values, len(form))
	for k, vs := range form {
		cp := make([]string, len(vs))
		for i, v := range vs {
			if strings.IndexByte(v, '\r') >= 0 {
				v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
			}
			cp[i] = v
		}
		out[k] = cp
	}
	return out
}
