package components

import (
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/render/view"
)

// field returns the card's field wrapper for control name.
func field(t *testing.T, doc *goquery.Document, name string) *goquery.Selection {
	t.Helper()
	s := doc.Find(`[data-testid="field"][data-name="` + name + `"]`)
	require.Equal(t, 1, s.Length(), "one field %s", name)
	return s
}

func TestFieldControls(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cform"), answerable())
	form := doc.Find(`form[data-testid="answer-form"]`)
	require.Equal(t, 1, form.Length())
	assert.Equal(t, "post", attr(t, form, "method"))
	assert.Equal(t, "/forms/cards/cform/answer", attr(t, form, "action"))
	token := form.Find(`input[type="hidden"][name="token"]`)
	require.Equal(t, 1, token.Length())
	assert.Equal(t, "tok-1", attr(t, token, "value"))

	t.Run("string", func(t *testing.T) {
		f := field(t, doc, "f0")
		assert.Equal(t, "text", attr(t, f, "data-kind"))
		in := f.Find("input")
		require.Equal(t, 1, in.Length())
		assert.Equal(t, "text", attr(t, in, "type"))
		assert.Equal(t, "cform-f0", attr(t, in, "id"))
		assert.True(t, has(in, "required"), "required text input")
		label := f.Find(`label[for="cform-f0"]`)
		assert.Equal(t, "Change ticket (required)", squash(label.Text()), "required in words")
	})

	t.Run("long string", func(t *testing.T) {
		f := field(t, doc, "f1")
		ta := f.Find("textarea")
		require.Equal(t, 1, ta.Length())
		assert.Equal(t, "f1", attr(t, ta, "name"))
		assert.Equal(t, "3", attr(t, ta, "rows"))
		assert.False(t, has(ta, "required"))
		assert.NotContains(t, f.Find("label").Text(), "(required)")
	})

	t.Run("number", func(t *testing.T) {
		f := field(t, doc, "f2")
		in := f.Find("input")
		assert.Equal(t, "number", attr(t, in, "type"))
		assert.Equal(t, "decimal", attr(t, in, "inputmode"))
		assert.Equal(t, "any", attr(t, in, "step"))
		assert.Equal(t, "0.5", attr(t, in, "min"))
		assert.Equal(t, "2500", attr(t, in, "max"))
		assert.True(t, has(in, "required"))
		hint := f.Find(".field__hint")
		assert.Equal(t, "Between 0.5 and 2500", hint.Text(), "range in words")
		assert.Equal(t, attr(t, hint, "id"), attr(t, in, "aria-describedby"), "hint tied to the control")
	})

	t.Run("boolean", func(t *testing.T) {
		f := field(t, doc, "f3")
		in := f.Find("input")
		require.Equal(t, 1, in.Length())
		assert.Equal(t, "checkbox", attr(t, in, "type"))
		assert.Equal(t, "on", attr(t, in, "value"))
		assert.False(t, has(in, "required"), "a required boolean is never HTML-required: unticked is an answer")
		assert.NotContains(t, f.Text(), "(required)")
		assert.Equal(t, "Page the on-call engineer", squash(f.Find("label").Text()), "the label states the true case")
	})

	t.Run("single select as radios", func(t *testing.T) {
		f := field(t, doc, "f4")
		fs := f.Find("fieldset")
		require.Equal(t, 1, fs.Length())
		assert.Equal(t, "Environment (required)", squash(fs.Find("legend").Text()))
		radios := fs.Find(`input[type="radio"]`)
		require.Equal(t, 2, radios.Length())
		assert.Equal(t, []string{"0", "1"}, vals(radios, "value"), "choice values are indexes, never agent ids")
		assert.Equal(t, []string{"f4", "f4"}, vals(radios, "name"))
		assert.Equal(t, []string{"cform-f4-c0", "cform-f4-c1"}, vals(radios, "id"))
		assert.True(t, has(radios.Eq(0), "required"), "required on one radio of a required group")
		assert.False(t, has(radios.Eq(1), "required"))
		assert.Equal(t, "Production", squash(fs.Find(`label[for="cform-f4-c1"]`).Text()))
	})

	t.Run("single select with other", func(t *testing.T) {
		f := field(t, doc, "f5")
		radios := f.Find(`input[type="radio"]`)
		require.Equal(t, 3, radios.Length())
		last := radios.Last()
		assert.Equal(t, "other", attr(t, last, "value"), "Other is the last choice")
		assert.Equal(t, "Other", squash(f.Find(`label[for="`+attr(t, last, "id")+`"]`).Text()))
		text := f.Find(`input[type="text"]`)
		require.Equal(t, 1, text.Length())
		assert.Equal(t, "f5-other", attr(t, text, "name"))
		assert.Equal(t, "cform-f5-other", attr(t, text, "id"))
		assert.Equal(t, 1, f.Find(`label[for="cform-f5-other"]`).Length(), "the Other text has a label")
		for _, r := range radios.EachIter() {
			assert.False(t, has(r, "required"), "optional group: no required")
		}
	})

	t.Run("many choices as select", func(t *testing.T) {
		f := field(t, doc, "f6")
		sel := f.Find("select")
		require.Equal(t, 1, sel.Length())
		assert.Equal(t, "f6", attr(t, sel, "name"))
		assert.True(t, has(sel, "required"))
		opts := sel.Find("option")
		require.Equal(t, 11, opts.Length())
		assert.Equal(t, "Choose…", opts.First().Text())
		assert.Equal(t, "", attr(t, opts.First(), "value"), "the empty first option")
		assert.True(t, has(opts.First(), "selected"), "nothing chosen yet")
		assert.Equal(t, "9", attr(t, opts.Last(), "value"))
	})

	t.Run("multi select with other", func(t *testing.T) {
		f := field(t, doc, "f7")
		boxes := f.Find(`fieldset input[type="checkbox"]`)
		require.Equal(t, 3, boxes.Length())
		assert.Equal(t, []string{"0", "1", "other"}, vals(boxes, "value"))
		assert.Equal(t, []string{"f7", "f7", "f7"}, vals(boxes, "name"))
		for _, b := range boxes.EachIter() {
			assert.False(t, has(b, "required"), "checkboxes are never HTML-required")
		}
		assert.Contains(t, squash(f.Find("legend").Text()), "(required)", "required in words")
		assert.Equal(t, 1, f.Find(`input[name="f7-other"]`).Length())
		hint := f.Find(".field__hint")
		assert.Equal(t, attr(t, hint, "id"), attr(t, f.Find("fieldset"), "aria-describedby"))
	})

	submit := form.Find(`[data-testid="submit"]`)
	require.Equal(t, 1, submit.Length())
	assert.Equal(t, "submit", attr(t, submit, "type"))
	assert.Equal(t, "Send answer", submit.Text())
	assertDescribedBy(t, doc)

	// No control carries an agent id as its name, id or value.
	for _, s := range doc.Find("input, select, textarea, option").EachIter() {
		for _, a := range []string{"name", "id", "value"} {
			v := s.AttrOr(a, "")
			for _, agentID := range []string{"ticket", "budget", "env", "staging", "prod", "sre", "us-east-1"} {
				assert.NotEqual(t, agentID, v, "%s=%q is an agent id", a, v)
			}
		}
	}
}

// Other chosen and left empty: the error link goes to Other's text box,
// where the fix is typed, not to the field's first choice.
func TestErrorLinkToAnEmptyOtherGoesToItsBox(t *testing.T) {
	t.Parallel()
	o := answerable()
	o.Input = url.Values{"f5": {"other"}, "f5-other": {" "}, "f7": {"other"}, "f7-other": {""}}
	o.Problems = []aep.Problem{
		{Field: "db", Code: "blank", Message: "Type your answer under Other, or choose one of the options"},
		{Field: "notify", Code: "blank", Message: "Type your answer under Other, or untick Other"},
	}
	doc := cardDoc(t, sample(t, "cform"), o)
	links := doc.Find(`[data-testid="error-summary"] a[data-testid="error-link"]`)
	assert.Equal(t, []string{"#cform-f5-other", "#cform-f7-other"}, vals(links, "href"))
	for _, l := range links.EachIter() {
		assert.Equal(t, "text", doc.Find(l.AttrOr("href", "")).AttrOr("type", ""), "link %s jumps to a text box", l.AttrOr("href", ""))
	}
}

func TestFieldKeptInputAndErrors(t *testing.T) {
	t.Parallel()
	o := answerable()
	o.Input = url.Values{"f0": {""}, "f2": {"9000"}, "f3": {"on"}, "f5": {"other"}, "f5-other": {"<b>MySQL</b>"}, "f1": {"\nstarts with a newline"}, "f7": {"1"}}
	o.Problems = []aep.Problem{
		{Field: "ticket", Code: "required", Message: "Enter the change ticket"},
		{Field: "budget", Code: "out-of-range", Message: "Enter a number between 0.5 and 2500"},
		{Field: "env", Code: "required", Message: "Choose an environment"},
		{Field: "notify", Code: "x", Message: "Pick who to tell"},
	}
	doc := cardDoc(t, sample(t, "cform"), o)

	sum := doc.Find(`[data-testid="error-summary"]`)
	require.Equal(t, 1, sum.Length())
	assert.Equal(t, "-1", attr(t, sum, "tabindex"), "the summary can take focus")
	assert.Equal(t, "There is a problem", sum.Find("h4").Text())
	links := sum.Find(`a[data-testid="error-link"]`)
	require.Equal(t, 4, links.Length())
	assert.Equal(t, []string{"#cform-f0", "#cform-f2", "#cform-f4-c0", "#cform-f7-c0"}, vals(links, "href"))
	for _, l := range links.EachIter() {
		assert.Equal(t, 1, doc.Find(l.AttrOr("href", "")).Length(), "link %s jumps to a control", l.AttrOr("href", ""))
	}
	assert.Equal(t, "Budget in USD: Enter a number between 0.5 and 2500", squash(links.Eq(1).Text()), "a summary line names its field")
	assert.Equal(t, "Budget in USD:", links.Eq(1).Find(".error-summary__field").Text(), "the field name apart from the message")
	assert.Equal(t, "Enter the change ticket", squash(links.Eq(0).Text()), "a message naming its field is not prefixed")

	budget := field(t, doc, "f2")
	assert.True(t, budget.HasClass("field--error"))
	in := budget.Find("input")
	assert.Equal(t, "true", attr(t, in, "aria-invalid"))
	assert.Equal(t, "9000", attr(t, in, "value"), "input kept exactly")
	ids := strings.Fields(attr(t, in, "aria-describedby"))
	require.Len(t, ids, 2)
	msg := doc.Find("#" + ids[0])
	assert.Equal(t, "Error: Enter a number between 0.5 and 2500", msg.Text())
	assert.Equal(t, "field-error", attr(t, msg, "data-testid"))
	// The message sits above the control.
	assert.Less(t, budget.Find(".field__error").Index(), budget.Find("input").Index())

	env := field(t, doc, "f4")
	assert.Equal(t, "true", attr(t, env.Find("fieldset"), "aria-invalid"), "radio group marked invalid")
	notify := field(t, doc, "f7")
	for _, b := range notify.Find(`input[type="checkbox"]`).EachIter() {
		assert.Equal(t, "true", attr(t, b, "aria-invalid"), "each checkbox of an invalid group")
	}
	assert.True(t, has(notify.Find(`input[value="1"]`), "checked"), "kept choice")
	assert.False(t, has(notify.Find(`input[value="0"]`), "checked"))

	assert.True(t, has(field(t, doc, "f3").Find("input"), "checked"))
	db := field(t, doc, "f5")
	assert.True(t, has(db.Find(`input[value="other"]`), "checked"))
	assert.Equal(t, "<b>MySQL</b>", attr(t, db.Find(`input[name="f5-other"]`), "value"), "Other text kept, as text")
	assert.Equal(t, "\nstarts with a newline", field(t, doc, "f1").Find("textarea").Text(), "textarea keeps a leading newline")
	assert.Empty(t, field(t, doc, "f0").Find("input").AttrOr("value", ""), "a blank kept input stays blank")
	assertDescribedBy(t, doc)
}

func TestFieldPlaceholdersAtMetadata(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, sample(t, "cmeta"), answerable())
	note := doc.Find(`[data-testid="placeholder-note"]`)
	require.Equal(t, 1, note.Length())
	assert.Contains(t, note.Text(), "Labels withheld at capture metadata")
	// Headed by the structural prompt (it names the agent and what it
	// asks), not by "Form" alone, and not repeated in a quote.
	assert.Equal(t, "Form claude-code requests form: AskUserQuestion", squash(doc.Find(`.card__title`).Text()))
	assert.Equal(t, "claude-code requests form: AskUserQuestion", doc.Find(`[data-testid="question"]`).Text())
	assert.Zero(t, doc.Find(`[data-testid="prompt"]`).Length(), "the heading is the whole prompt")
	legend := field(t, doc, "f0").Find("legend")
	assert.Equal(t, "Field 1 (required)", squash(legend.Text()))
	assert.Equal(t, "1", legend.Find("code").Text(), "the id is shown as an id")
	labels := field(t, doc, "f1").Find(".check__label code")
	assert.Equal(t, []string{"1", "2"}, texts(labels), "choice ids shown, never invented labels")
}

func TestFieldEscaping(t *testing.T) {
	t.Parallel()
	html := renderHTML(t, CardFragment(view.Card(sample(t, "chostile"), answerable())))
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	require.NoError(t, err)
	assert.Equal(t, 0, doc.Find("script").Length(), "agent text never becomes a script element")
	assert.Equal(t, 0, doc.Find("b, i").Length(), "nor markup")
	assert.Contains(t, doc.Find(`[data-testid="prompt"]`).Text(), "<script>alert('prompt')</script>", "shown as text")
	assert.Equal(t, "<script>alert('label')</script>", squash(field(t, doc, "f0").Find("label").Text()))
	assert.Contains(t, doc.Find(`[data-testid="prov-agent"]`).Text(), "<b>evil</b>")
	assert.NotContains(t, html, "<script>alert")
	assert.True(t, doc.Find(`[data-testid="prompt"]`).Is(`[data-long="true"]`), "a long prompt is collapsible")
	assert.Equal(t, 1, doc.Find(`button[data-action="expand"][hidden]`).Length(), "Show all, revealed by the script")
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func vals(s *goquery.Selection, name string) []string {
	var out []string
	for _, e := range s.EachIter() {
		out = append(out, e.AttrOr(name, "<none>"))
	}
	return out
}

func texts(s *goquery.Selection) []string {
	var out []string
	for _, e := range s.EachIter() {
		out = append(out, squash(e.Text()))
	}
	return out
}
