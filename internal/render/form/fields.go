package form

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// FieldKind is the control a field is rendered as.
type FieldKind string

// Field kinds, one component each.
const (
	FieldText       FieldKind = "text"       // <input type=text>
	FieldTextarea   FieldKind = "textarea"   // <textarea>, an answer that may be long
	FieldNumber     FieldKind = "number"     // <input type=number inputmode=decimal step=any>
	FieldBoolean    FieldKind = "boolean"    // one checkbox: unticked is a real false
	FieldRadios     FieldKind = "radios"     // single select, few choices
	FieldSelect     FieldKind = "select"     // single select, many choices: <select>
	FieldCheckboxes FieldKind = "checkboxes" // multi select
)

// MaxRadios is the most choices (Other included) a single select shows as
// radios; above it the field is a <select>.
const MaxRadios = 7

// Field is one form field, ready to render.
type Field struct {
	Index int
	Kind  FieldKind
	Name  string // "f{i}"
	ID    string // "{card}-f{i}": the control, or the fieldset of a group

	Label       string // the agent's label (text), or its placeholder
	AgentID     string // the agent's field id, shown when the label is a placeholder
	Placeholder bool

	Required     bool // "(required)" in words
	RequiredAttr bool // HTML required on the control (text, number, <select>)

	Hint, HintID   string
	Error, ErrorID string
	// DescribedBy is the aria-describedby of the control (or fieldset):
	// the error then the hint, when present.
	DescribedBy string
	// ErrorTarget is the id an error summary link jumps to.
	ErrorTarget string

	Value   string // text and number: the kept input
	Checked bool   // boolean: ticked
	Min     string // number: min attribute ("" = none)
	Max     string // number: max attribute ("" = none)

	Choices []Choice // radios, select, checkboxes
	Other   *Other   // the field takes an Other answer
	// LookAlike warns that two or more choices look alike (the view sets
	// it: "These choices look alike"); empty when none do.
	LookAlike string

	Disabled bool
}

// Invalid reports whether the field is in error (aria-invalid).
func (f Field) Invalid() bool { return f.Error != "" }

// Choice is one choice of a select field.
type Choice struct {
	Index       int
	Value       string // "{j}"
	ID          string // "{card}-f{i}-c{j}"
	Label       string
	AgentID     string
	Placeholder bool
	Checked     bool // ticked, chosen or selected
	// RequiredAttr is set on the first radio of a required group (HTML
	// requires one of the group then).
	RequiredAttr bool
}

// Other is the Other choice of a select field and its text entry.
type Other struct {
	ChoiceID string // the Other radio/checkbox id: "{card}-f{i}-other-choice"
	Value    string // "other"
	Checked  bool
	Name     string // "f{i}-other"
	InputID  string // "{card}-f{i}-other"
	Text     string // the kept Other text
	Label    string // the text entry's label
}

// fieldProblems are a refused post's problems, placed.
type fieldProblems struct {
	byField map[int]string // field index -> message
	general []string       // problems with the whole answer (or not placeable)
}

// problemsByField maps problems (agent field ids) to positional indexes.
func problemsByField(req aep.Request, probs []aep.Problem) fieldProblems {
	fp := fieldProblems{byField: map[int]string{}}
	for _, p := range probs {
		i := slices.IndexFunc(req.Fields, func(f aep.FieldSpec) bool { return f.ID == p.Field })
		if p.Field == "" || i < 0 {
			fp.general = append(fp.general, problemMessage(p, nil))
			continue
		}
		if _, dup := fp.byField[i]; dup {
			continue // one message per field: the first names what to fix first
		}
		fp.byField[i] = problemMessage(p, &req.Fields[i])
	}
	return fp
}

// problemMessage is the operator-facing message of a problem: its own
// message, or one derived from its code when it has none.
func problemMessage(p aep.Problem, f *aep.FieldSpec) string {
	if p.Message != "" {
		return p.Message
	}
	if f == nil {
		return "The answer was not accepted (" + p.Code + "): check it and send it again."
	}
	switch {
	case p.Code == "required" && f.Type == aep.FieldSelect && f.Multi:
		return "Select at least one answer for " + quoteLabel(f)
	case p.Code == "required" && f.Type == aep.FieldSelect:
		return "Choose an answer for " + quoteLabel(f)
	case p.Code == "required":
		return "Enter an answer for " + quoteLabel(f)
	case f.Type == aep.FieldNumber:
		return "Enter a number for " + quoteLabel(f) + numberRangeSuffix(*f)
	default:
		return "Check the answer for " + quoteLabel(f) + " (" + p.Code + ")"
	}
}

func quoteLabel(f *aep.FieldSpec) string {
	l := f.Label
	if l == "" {
		l = f.ID
	}
	return "“" + Label(l) + "”"
}

func numberRangeSuffix(f aep.FieldSpec) string {
	if h := numberHint(f); h != "A number" {
		return ": " + strings.ToLower(h[:1]) + h[1:]
	}
	return ""
}

// Spec is what Build needs to make a card's form.
type Spec struct {
	Card    string // the card id: the prefix of every element id
	Request aep.Request
	Action  string // where the form posts
	Token   string // the hidden form token
	// Answerable offers a submit; false shows the controls disabled.
	Answerable bool
	// Kept is the operator's input to show in the controls (a refused
	// post, a submission); nil for a fresh form.
	Kept url.Values
	// Problems are a refused post's problems (Field = the agent's field id).
	Problems []aep.Problem
	// Placeholder is true when labels are structural placeholders (capture
	// metadata or none): ids are shown beside them.
	Placeholder bool
}

// Build returns the card's form, nil when the request has nothing to show
// as a control, and the error summary of its problems: linked to their
// controls when the form is answerable, plain lines otherwise.
func Build(s Spec) (*View, []ErrorLink) {
	b := formBuilder{card: s.Card, req: s.Request, kept: s.Kept, probs: problemsByField(s.Request, s.Problems),
		disabled: !s.Answerable, placeholder: s.Placeholder}
	f := &View{Action: s.Action, Token: s.Token, Answerable: s.Answerable, Kept: len(s.Kept) > 0}
	f.Fields = b.fields()
	f.Options = b.options()
	f.Reply = b.reply()
	if (f.Reply != nil && !f.Reply.Note) || len(f.Fields) > 0 {
		// A note is sent by an option button, or by its own note-only
		// button: no "Send answer" beside the options.
		f.SubmitLabel = "Send answer"
	}
	toFill := len(f.Fields)
	if f.Reply != nil {
		toFill++
	}
	f.HoldEnter = toFill > 1 || len(f.Options) > 0
	if len(f.Fields) == 0 && len(f.Options) == 0 && f.Reply == nil {
		return nil, b.probs.unlinked(s.Request, s.Placeholder)
	}
	if !f.Answerable {
		// No control to jump to: a disabled control cannot take focus.
		return f, b.probs.unlinked(s.Request, s.Placeholder)
	}
	return f, b.summary(f)
}

// Unlinked is the error summary of a card that shows no control to jump
// to: every problem in field order, then the whole-answer ones.
func Unlinked(req aep.Request, problems []aep.Problem, placeholder bool) []ErrorLink {
	return problemsByField(req, problems).unlinked(req, placeholder)
}

// formBuilder builds one card's controls.
type formBuilder struct {
	card        string
	req         aep.Request
	kept        url.Values
	probs       fieldProblems
	disabled    bool
	placeholder bool
}

func (b formBuilder) fields() []Field {
	if b.req.Kind != aep.KindForm {
		return nil
	}
	out := make([]Field, 0, len(b.req.Fields))
	for i, spec := range b.req.Fields {
		out = append(out, b.field(i, spec))
	}
	return out
}

func (b formBuilder) field(i int, spec aep.FieldSpec) Field {
	name := FieldName(i)
	id := b.card + "-" + name
	f := Field{
		Index:       i,
		Name:        name,
		ID:          id,
		Label:       Label(spec.Label),
		AgentID:     Label(spec.ID),
		Placeholder: b.placeholder,
		Required:    spec.Required && spec.Type != aep.FieldBoolean,
		HintID:      id + "-hint",
		ErrorID:     id + "-error",
		ErrorTarget: id,
		Disabled:    b.disabled,
	}
	if f.Label == "" {
		f.Label = Label(spec.ID)
	}
	switch spec.Type {
	case aep.FieldNumber:
		f.Kind = FieldNumber
		f.RequiredAttr = spec.Required
		f.Hint = numberHint(spec)
		f.Min, f.Max = formatBound(spec.Min), formatBound(spec.Max)
		f.Value = b.kept.Get(name)
	case aep.FieldBoolean:
		f.Kind = FieldBoolean
		f.Hint = "Leave unticked to answer no."
		f.Checked = b.kept.Get(name) != ""
	case aep.FieldSelect:
		b.selectField(&f, spec)
	default: // string, and an unknown type the validation did not catch
		f.Kind = FieldText
		if longAnswer(spec) {
			f.Kind = FieldTextarea
		}
		f.RequiredAttr = spec.Required
		f.Value = b.kept.Get(name)
	}
	if msg, ok := b.probs.byField[i]; ok {
		f.Error = msg
		// Other chosen and left empty: the fix is typing in its box.
		if f.Other != nil && f.Other.Checked && strings.TrimSpace(f.Other.Text) == "" {
			f.ErrorTarget = f.Other.InputID
		}
	}
	f.DescribedBy = describedBy(f.Error, f.ErrorID, f.Hint, f.HintID)
	return f
}

func (b formBuilder) selectField(f *Field, spec aep.FieldSpec) {
	picked := b.kept[f.Name]
	n := len(spec.Choices)
	if spec.Other {
		n++
	}
	switch {
	case spec.Multi:
		f.Kind = FieldCheckboxes
		f.Hint = "Select all that apply."
	case n > MaxRadios:
		f.Kind = FieldSelect
		f.RequiredAttr = spec.Required
	default:
		f.Kind = FieldRadios
	}
	for j, c := range spec.Choices {
		cv := Choice{
			Index:       j,
			Value:       ChoiceValue(j),
			ID:          f.ID + "-c" + strconv.Itoa(j),
			Label:       Label(c.Label),
			AgentID:     Label(c.ID),
			Placeholder: b.placeholder,
			Checked:     slices.Contains(picked, ChoiceValue(j)),
		}
		if cv.Label == "" {
			cv.Label = Label(c.ID)
		}
		f.Choices = append(f.Choices, cv)
	}
	if spec.Other {
		f.Other = &Other{
			ChoiceID: f.ID + "-other-choice",
			Value:    ValueOther,
			Checked:  slices.Contains(picked, ValueOther),
			Name:     OtherName(f.Index),
			InputID:  f.ID + "-other",
			Text:     b.kept.Get(OtherName(f.Index)),
			Label:    "Your other answer",
		}
	}
	if f.Kind == FieldRadios || f.Kind == FieldCheckboxes {
		// Group: the summary jumps to the first control, the fieldset
		// carries the id and the description.
		if len(f.Choices) > 0 {
			f.ErrorTarget = f.Choices[0].ID
		} else if f.Other != nil {
			f.ErrorTarget = f.Other.ChoiceID
		}
		if f.Kind == FieldRadios && spec.Required {
			if len(f.Choices) > 0 {
				f.Choices[0].RequiredAttr = true
			}
		}
	}
}

// options builds the option buttons of a permission, review, auth, input
// or unknown-kind request; a form has none.
func (b formBuilder) options() []Option {
	if !AcceptsOption(b.req) {
		return nil
	}
	out := make([]Option, 0, len(b.req.Options))
	// The refusing option is marked only when exactly one option reads
	// as one: with two the words cannot say which refuses. The mark is
	// looks only; what is sent is the option pressed.
	refusing := -1
	for j, o := range b.req.Options {
		if isDeny(o) {
			if refusing >= 0 {
				refusing = -2
				break
			}
			refusing = j
		}
	}
	// A permission card puts no option forward: allow and deny weigh the
	// same, so the operator reads before pressing.
	primary := b.req.Kind == aep.KindPermission
	for j, o := range b.req.Options {
		ov := Option{
			Index:       j,
			Value:       strconv.Itoa(j),
			Label:       Label(o.Label),
			AgentID:     Label(o.ID),
			Placeholder: b.placeholder,
			Style:       "secondary",
		}
		if ov.Label == "" {
			ov.Label = Label(o.ID)
		}
		switch {
		case j == refusing:
			ov.Style = "deny"
			ov.Refusing = true
		case !primary:
			ov.Style = "primary"
			primary = true
		}
		out = append(out, ov)
	}
	return out
}

// reply builds the free-text reply: the "text" control, offered exactly
// when ParseAnswer reads it (AcceptsText, the one rule for both).
func (b formBuilder) reply() *Reply {
	if !AcceptsText(b.req) {
		return nil
	}
	id := b.card + "-text"
	r := &Reply{
		Name:     NameText,
		ID:       id,
		Label:    "Your answer",
		Required: len(b.req.Options) == 0,
		Value:    b.kept.Get(NameText),
		HintID:   id + "-hint",
		ErrorID:  id + "-error",
		Disabled: b.disabled,
	}
	if len(b.req.Options) > 0 {
		r.Label = "Or answer in your own words"
	}
	if TakesNote(b.req) {
		// A note to the options, behind "Add a note" (the view words it):
		// a textarea, so Enter in it never presses an option.
		r.Note = true
		r.Required = false
		r.OnlyHintID = id + "-only-hint"
		r.Open = r.Value != "" || len(b.probs.general) > 0
	}
	if len(b.probs.general) > 0 {
		r.Error = b.probs.general[0]
	}
	r.Invalid = r.Error != ""
	r.DescribedBy = describedBy(r.Error, r.ErrorID, r.Hint, r.HintID)
	return r
}

// summary builds the error summary links in field order.
// unlinked is the error summary of a card whose controls cannot take
// focus: every problem in field order, then the whole-answer ones, none
// of them a link.
func (fp fieldProblems) unlinked(req aep.Request, placeholder bool) []ErrorLink {
	var out []ErrorLink
	for i, f := range req.Fields {
		if msg, ok := fp.byField[i]; ok {
			label := Label(f.Label)
			if placeholder || label == "" {
				label = "Field " + Label(f.ID)
			}
			out = append(out, ErrorLink{Message: msg, Field: fieldNameFor(label, msg)})
		}
	}
	for _, msg := range fp.general {
		out = append(out, ErrorLink{Message: msg})
	}
	return out
}

// fieldNameFor is the field name an error summary line shows before msg:
// label, unless msg already names it.
func fieldNameFor(label, msg string) string {
	if label == "" || strings.Contains(strings.ToLower(msg), strings.ToLower(label)) {
		return ""
	}
	return label
}

// summary is the error summary of an answerable form: each field problem
// links to its control, the first whole-answer problem to the reply.
func (b formBuilder) summary(f *View) []ErrorLink {
	var out []ErrorLink
	for _, fv := range f.Fields {
		if fv.Error != "" {
			label := fv.Label
			if fv.Placeholder {
				label = "Field " + fv.AgentID
			}
			out = append(out, ErrorLink{Href: "#" + fv.ErrorTarget, Message: fv.Error, Field: fieldNameFor(label, fv.Error)})
		}
	}
	for k, msg := range b.probs.general {
		switch {
		case k == 0 && f.Reply != nil:
			out = append(out, ErrorLink{Href: "#" + f.Reply.ID, Message: msg})
		default:
			out = append(out, ErrorLink{Message: msg})
		}
	}
	return out
}

// numberHint states a number field's range in words.
func numberHint(f aep.FieldSpec) string {
	lo, hi := formatBound(f.Min), formatBound(f.Max)
	switch {
	case lo != "" && hi != "":
		return "Between " + lo + " and " + hi
	case lo != "":
		return "At least " + lo
	case hi != "":
		return "At most " + hi
	default:
		return "A number"
	}
}

// formatBound formats a min/max for the attribute and the hint: the
// shortest decimal that reads back as the same float ("" for nil).
func formatBound(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// longAnswerWords are label words that ask for more than a line.
var longAnswerWords = []string{
	"describe", "description", "explain", "why", "detail", "details", "notes",
	"note", "comment", "comments", "message", "reason", "summary", "feedback",
	"steps", "context", "body", "instructions",
}

// longAnswer reports whether a string field's answer may be long (a
// textarea): its label or id asks for a description, or the label is itself
// long (a long question tends to want a long answer).
func longAnswer(f aep.FieldSpec) bool {
	words := strings.FieldsFunc(strings.ToLower(f.Label+" "+f.ID), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	for _, w := range words {
		if slices.Contains(longAnswerWords, w) {
			return true
		}
	}
	return len(f.Label) > 80
}

// denyWords mark an option as destructive when its id or label starts
// with one of them.
var denyWords = []string{"deny", "reject", "no", "refuse", "decline", "block"}

// isDeny reports whether an option denies (styled apart, never the default).
func isDeny(o aep.Option) bool {
	for _, s := range []string{o.ID, o.Label} {
		words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9')
		})
		if len(words) > 0 && slices.Contains(denyWords, words[0]) {
			return true
		}
	}
	return false
}

// describedBy joins the ids of the error and hint that are present.
func describedBy(errMsg, errID, hint, hintID string) string {
	var ids []string
	if errMsg != "" {
		ids = append(ids, errID)
	}
	if hint != "" {
		ids = append(ids, hintID)
	}
	return strings.Join(ids, " ")
}
