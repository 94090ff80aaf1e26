package view

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/aepforms/aepforms/internal/render/form"
)

// Agent text cannot pass for other text. Three rules, applied here and
// nowhere else:
//
//   - Text: NUL and the other C0 and C1 controls but tab and newline become
//     U+FFFD (a CR LF or lone CR is a line break, kept as a newline). Every
//     string of a view model passes through it (scrub) as the last step of
//     Card, Page and SignIn.
//   - Marked: bidi embedding, override and isolate controls (U+202A–U+202E,
//     U+2066–U+2069) in labels, choice and option labels, and in messages
//     that quote them, become visible markers ("⟨U+202E⟩"); so does
//     invisible text (zero-width space, BOM, word joiner, soft hyphen, and
//     the zero-width joiners outside the scripts and emoji that need them)
//     in the choices of a field that look alike because of it.
//   - Isolation: the components wrap agent text in an isolating element
//     (<bdi>, or dir="auto" with unicode-bidi: isolate), agent text inside
//     the UI's own sentences (a state line, a notice) included (Span), so
//     nothing it holds reorders the UI's words.

// Text returns agent text safe to reach HTML: CR LF and lone CR become
// LF, and every other control character but tab and newline (C0, DEL, C1)
// becomes U+FFFD. Text without any is returned as is.
func Text(s string) string {
	if !hasControl(s) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case r == '\t' || r == '\n':
			return r
		case unicode.IsControl(r):
			return utf8.RuneError
		}
		return r
	}, s)
}

// hasControl reports whether s holds a control character Text replaces.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b < 0x20 && b != '\t' && b != '\n', b == 0x7f:
			return true
		case b == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f: // U+0080–U+009F
			return true
		}
	}
	return false
}

// isBidiControl reports whether r is a bidi embedding, override or
// isolate control (U+202A–U+202E, U+2066–U+2069).
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// isInvisible reports whether rs[i] is a character that shows
// nothing and can make two labels look alike: a zero-width space, BOM,
// word joiner or soft hyphen anywhere, a zero-width (non-)joiner outside
// the scripts and emoji sequences that need one.
func isInvisible(rs []rune, i int) bool {
	switch rs[i] {
	case 0x200b, 0xfeff, 0x2060, 0x00ad:
		return true
	case 0x200c, 0x200d:
		var prev, next rune
		if i > 0 {
			prev = rs[i-1]
		}
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		return !needsJoiner(rs[i], prev, next)
	}
	return false
}

// joinerScripts are the scripts whose spelling uses ZWNJ and ZWJ (Arabic
// and its neighbours, the Indic and South-East Asian abugidas).
var joinerScripts = []*unicode.RangeTable{
	unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian, unicode.Thaana,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya,
	unicode.Tamil, unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala,
	unicode.Myanmar, unicode.Khmer, unicode.Tibetan, unicode.Phags_Pa,
}

// needsJoiner reports whether the joiner j between prev and next is part
// of the text's spelling: a letter of a script that uses joiners on either
// side, or (ZWJ) an emoji sequence.
func needsJoiner(j, prev, next rune) bool {
	for _, r := range []rune{prev, next} {
		if r != 0 && unicode.In(r, joinerScripts...) && unicode.In(r, unicode.L, unicode.M) {
			return true
		}
	}
	return j == 0x200d && isEmoji(prev) && isEmoji(next)
}

// isEmoji is a rough test for a character of an emoji ZWJ sequence:
// symbols, the pictographic planes, variation selector 16, skin tones.
func isEmoji(r rune) bool {
	return r >= 0x1f000 && r <= 0x1faff || r >= 0x2600 && r <= 0x27bf || r == 0xfe0f || unicode.Is(unicode.So, r)
}

// marker is the visible stand-in for an invisible or direction-changing
// character: "⟨U+202E⟩".
func marker(r rune) string { return fmt.Sprintf("⟨U+%04X⟩", r) }

// Marked returns agent text as Text does, with bidi controls shown as
// markers: for labels and for the UI's messages that quote them.
func Marked(s string) string { return mark(Text(s), false) }

// mark replaces bidi controls (and, with invisible, invisible characters)
// by markers.
func mark(s string, invisible bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool {
		return isBidiControl(r) || (invisible && r >= 0x00ad && r <= 0xfeff)
	}) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if isBidiControl(r) || (invisible && isInvisible(rs, i)) {
			b.WriteString(marker(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Span is a run of a sentence: the UI's words, or agent text inside them
// (Agent), which the components isolate (<bdi>).
type Span struct {
	Text  string
	Agent bool
}

// spans splits text at the agent strings it holds, in order (each is
// looked for after the previous one; empty ones are skipped).
func spans(text string, agent []string) []Span {
	if text == "" {
		return nil
	}
	var out []Span
	for _, a := range agent {
		i := strings.Index(text, a)
		if a == "" || i < 0 {
			continue
		}
		if i > 0 {
			out = append(out, Span{Text: text[:i]})
		}
		out = append(out, Span{Text: a, Agent: true})
		text = text[i+len(a):]
	}
	if text != "" {
		out = append(out, Span{Text: text})
	}
	return out
}

// Sentence is one of the UI's sentences with agent text inside: Text to
// read, Spans to render.
type Sentence struct {
	Text  string
	Agent []string // the agent text inside Text, in order
	Spans []Span   // set by safeCard
}

// lookAlikeKey is what a label looks like: NFKC, case folded, with bidi
// controls and invisible characters removed. ASCII needs only lower case.
func lookAlikeKey(s string) string {
	s = strings.TrimSpace(s)
	if isASCII(s) {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	kept := make([]rune, 0, len(rs))
	for i, r := range rs {
		if isBidiControl(r) || isInvisible(rs, i) {
			continue
		}
		kept = append(kept, r)
	}
	// A Caser holds state: one per call, never shared between goroutines.
	return cases.Fold().String(norm.NFKC.String(strings.TrimSpace(string(kept))))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// shownLabel is one label a control shows (a choice's or an option's) and
// its agent id, shown instead when labels are placeholders.
type shownLabel struct {
	label, id   *string
	placeholder bool
}

// safeLabels marks the labels of one field's choices (or one request's
// options) and reports whether two or more look alike (identical after
// NFKC, case folding and removing invisible characters); the invisible
// characters of those that do are shown as markers.
func safeLabels(ls []shownLabel) (alike bool) {
	keys := make([]string, len(ls))
	count := make(map[string]int, len(ls))
	if len(ls) > 1 {
		for j, l := range ls {
			shown := *l.label
			if l.placeholder {
				shown = *l.id
			}
			keys[j] = lookAlikeKey(shown)
			count[keys[j]]++
		}
	}
	for j, l := range ls {
		same := count[keys[j]] > 1
		alike = alike || same
		*l.label, *l.id = mark(Text(*l.label), same), mark(Text(*l.id), same)
	}
	return alike
}

// safeForm marks the agent text of a card's form: labels, choices,
// options, and the messages that quote them; a select whose choices (or
// a request whose options) look alike gets the warning.
func safeForm(f *form.View) {
	if f == nil {
		return
	}
	for i := range f.Fields {
		fv := &f.Fields[i]
		fv.Label, fv.AgentID = Marked(fv.Label), Marked(fv.AgentID)
		fv.Error = Marked(fv.Error)
		ls := make([]shownLabel, len(fv.Choices))
		for j := range fv.Choices {
			c := &fv.Choices[j]
			ls[j] = shownLabel{&c.Label, &c.AgentID, c.Placeholder}
		}
		if safeLabels(ls) {
			fv.LookAlike = words.note["look-alike"]
		}
	}
	ls := make([]shownLabel, len(f.Options))
	for j := range f.Options {
		o := &f.Options[j]
		ls[j] = shownLabel{&o.Label, &o.AgentID, o.Placeholder}
	}
	if safeLabels(ls) {
		f.OptionsLookAlike = words.note["look-alike-options"]
	}
	if f.Reply != nil {
		f.Reply.Error = Marked(f.Reply.Error)
	}
}

// safeCard applies the rules to a card's view: markers in its form,
// recorded labels and error summary, then Text over every string.
func safeCard(v *CardView) {
	safeForm(v.Form)
	for i := range v.State.Values {
		rv := &v.State.Values[i]
		rv.Label, rv.Value = Marked(rv.Label), Marked(rv.Value)
	}
	v.GroupLabel = Marked(v.GroupLabel)
	if v.Answered != nil {
		v.Answered.Who = Marked(v.Answered.Who)
		if r := v.Answered.Rule; r != nil {
			r.Name, r.Maker = Marked(r.Name), Marked(r.Maker)
		}
	}
	for i := range v.Errors {
		e := &v.Errors[i]
		e.Message, e.Field = Marked(e.Message), Marked(e.Field)
	}
	scrub(reflect.ValueOf(v).Elem())
	v.State.Spans = spans(v.State.Text, v.State.Agent)
	for i := range v.State.Notes {
		n := &v.State.Notes[i]
		n.Spans = spans(n.Text, n.Agent)
	}
	for i := range v.Notes {
		n := &v.Notes[i]
		n.Spans = spans(n.Text, n.Agent)
	}
}

// safePage passes the page's own agent text through Text: notices (they
// name sessions), the feed error, the operator name, the filter; the
// cards were made safe by Card.
func safePage(v *PageView) {
	for i := range v.Notices {
		v.Notices[i] = Marked(v.Notices[i])
	}
	for _, p := range []any{&v.Notices, &v.Relay, &v.Operator, &v.Filter} {
		scrub(reflect.ValueOf(p).Elem())
	}
}

// scrub passes every settable string reachable from v (structs, pointers,
// slices, arrays) through Text. The strings of a view model are agent
// text or the UI's own (words, ids, URLs), and the UI's own hold no
// control characters, so only agent text changes, and a string field
// added to a view later cannot be missed.
func scrub(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); hasControl(s) {
				v.SetString(Text(s))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scrub(v.Elem())
		}
	case reflect.Struct:
		for _, i := range textFields(v.Type()) {
			scrub(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if e := v.Type().Elem(); e.Kind() == reflect.Uint8 || (e.Kind() == reflect.Struct && len(textFields(e)) == 0) {
			return // bytes, or structs without text
		}
		for i := 0; i < v.Len(); i++ {
			scrub(v.Index(i))
		}
	}
}

// textFieldsOf memoizes textFields: a view type's shape never changes, and
// reading it by reflection on every render would cost more than the scrub.
var textFieldsOf sync.Map // reflect.Type -> []int

// textFields are the indexes of a struct type's exported fields that hold
// strings, directly or inside.
func textFields(t reflect.Type) []int {
	if idx, ok := textFieldsOf.Load(t); ok {
		return idx.([]int)
	}
	var idx []int
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && holdsText(f.Type, nil) {
			idx = append(idx, i)
		}
	}
	textFieldsOf.Store(t, idx)
	return idx
}

// holdsText reports whether a value of type t may hold a string that
// scrub reaches (seen guards against recursive types).
func holdsText(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsText(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false
		}
		if seen == nil {
			seen = map[reflect.Type]bool{}
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && holdsText(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
