package components

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/render/view"
)

// The error summary joins a field's label and its message with a colon,
// unless the label ends a sentence itself: "Which database? Choose one",
// never "Which database?: Choose one".
func TestErrorSummaryLabelSeparator(t *testing.T) {
	t.Parallel()
	for label, want := range map[string]string{
		"Budget in USD":      ":",
		"Which database?":    "",
		"Deploy now!":        "",
		"Pick one of these:": "",
		"":                   "",
	} {
		assert.Equal(t, want, labelSep(label), "after %q", label)
	}
}

// On a permission card, "Add a note" comes before the option buttons, so
// the operator types the note and then presses Allow or Deny below it.
func TestNoteComesBeforeTheOptions(t *testing.T) {
	t.Parallel()
	doc := parse(t, Page(samplePage(pageOpts())))
	form := doc.Find(`#card-cperm form[data-testid="answer-form"]`)
	require.Equal(t, 1, form.Length())
	kids := form.Children()
	note, opts := kids.IndexOfSelection(kids.Filter(`[data-testid="note"]`)), kids.IndexOfSelection(kids.Filter(`[data-testid="options"]`))
	require.GreaterOrEqual(t, note, 0, "the note is in the form")
	require.GreaterOrEqual(t, opts, 0, "the options are in the form")
	assert.Less(t, note, opts, "the note comes before the options")
}

// Named operators sign in as a user name and password go: name first,
// then secret. Under the shared secret the secret comes first (the name
// is optional).
func TestSignInAsksForTheNameFirstForNamedOperators(t *testing.T) {
	t.Parallel()
	for _, named := range []bool{true, false} {
		v := view.SignIn("/", view.Assets{}, "", "")
		v.NameRequired = named
		doc := parse(t, SignIn(v))
		inputs := doc.Find(`[data-testid="signin-form"] input:not([type="hidden"])`)
		require.Equal(t, 2, inputs.Length())
		first := inputs.First().AttrOr("id", "")
		if named {
			assert.Equal(t, "signin-name", first, "named operators: the name first")
		} else {
			assert.Equal(t, "signin-secret", first, "shared secret: the secret first")
		}
	}
}
