package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// askUserQuestionReq is what Claude Code's AskUserQuestion becomes: one
// single and one multi select, each required and with Other.
func askUserQuestionReq() aep.Request {
	return aep.Request{Kind: aep.KindForm, Prompt: "Two questions", Fields: []aep.FieldSpec{
		{ID: "db", Type: aep.FieldSelect, Label: "Database", Required: true, Other: true,
			Choices: []aep.Choice{{ID: "pg", Label: "PostgreSQL"}, {ID: "sqlite", Label: "SQLite"}}},
		{ID: "regions", Type: aep.FieldSelect, Label: "Regions", Required: true, Multi: true, Other: true,
			Choices: []aep.Choice{{ID: "use", Label: "us-east"}, {ID: "euw", Label: "eu-west"}}},
	}}
}

// Other chosen with the mouse puts focus in its text box, so the first
// letter typed is the answer's (not the o shortcut); an error link for an
// Other left empty focuses that box, not the field's first choice.
func TestOtherAndErrorLinksFocusTheTextBox(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	id := h.ask("s1", "r1", askUserQuestionReq())
	card := "#" + domID(id)
	ctx, console := flowTab(t, h, "")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`label[for="`+string(id)+`-f0-other-choice"]`)))
	assert.Equal(t, string(id)+"-f0-other", eval[string](t, ctx, `document.activeElement.id`), "Other by mouse: focus in its box")
	press(t, ctx, "C")
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("ockroachDB")))
	assert.Equal(t, "CockroachDB", eval[string](t, ctx, `document.getElementById('`+string(id)+`-f0-other').value`), "every letter typed")

	// Field 2's Other ticked by key (Space on it) and left empty.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus("#"+string(id)+"-f1-other-choice")))
	press(t, ctx, " ")
	assert.Equal(t, string(id)+"-f1-other", eval[string](t, ctx, `document.activeElement.id`), "Other by key: focus in its box")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(card+` button[data-testid="submit"]`)))
	waitFor(t, ctx, `!!document.querySelector('`+card+` [data-testid="error-summary"]')`, "the error summary")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(card+` [data-testid="error-link"]`)))
	assert.Equal(t, string(id)+"-f1-other", eval[string](t, ctx, `document.activeElement.id`), "the error link: the empty Other box")
	assert.Empty(t, h.sub.all(), "nothing sent")
	stopTab(t, ctx, console, h.url("cards/"+string(id)+"/answer"))
}

// Esc leaves a text box of "Answer several at once" too: the j and x
// after it move and pick, and type nothing into the answer every selected
// question would get.
func TestEscLeavesTheBatchFormsTextBox(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askInOrder(h, nameForm(), nameForm(), nameForm())
	ctx, console := flowTab(t, h, "")

	press(t, ctx, "j")
	press(t, ctx, "x")
	name := `#batch-region [data-testid="batch"] input[name="f0"]`
	waitFor(t, ctx, `!!document.querySelector('`+name+`') && document.querySelector('`+name+`').offsetParent !== null`, "the batch answer's text box")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(name, "payments")))
	press(t, ctx, kb.Escape)
	assert.False(t, eval[bool](t, ctx, `document.activeElement === document.querySelector('`+name+`')`), "Esc left the text box")
	press(t, ctx, "j")
	press(t, ctx, "x")
	assert.Equal(t, "payments", eval[string](t, ctx, `document.querySelector('`+name+`').value`), "j and x typed nothing")
	assert.Equal(t, domID(ids[1]), eval[string](t, ctx, focusedCard), "j moved to the next card")
	assert.True(t, eval[bool](t, ctx, pickOf(ids[1])+`.checked`), "x picked it")
	stopTab(t, ctx, console)
}

// Once a batch answer is sent, its form is empty for the next selection:
// the next questions picked get only what the operator types for them.
func TestBatchFormStartsEmptyForANewSelection(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	ids := askInOrder(h, nameForm(), nameForm(), nameForm())
	ctx, console := flowTab(t, h, "")

	press(t, ctx, "j")
	press(t, ctx, "x")
	name := `#batch-region [data-testid="batch"] input[name="f0"]`
	waitFor(t, ctx, `!!document.querySelector('`+name+`') && document.querySelector('`+name+`').offsetParent !== null`, "the batch answer's text box")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(name, "payments")))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`#batch-region [data-testid="batch"] button[data-testid="submit"]`)))
	subs := waitSubmissions(t, h, 1)
	assert.Equal(t, ids[0], subs[0].Card)
	waitFor(t, ctx, `document.querySelectorAll('[data-testid="batch-outcome"][data-sent="true"]').length === 1`, "the outcome")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#"+domID(ids[1])+" [data-batch-pick]")))
	assert.Empty(t, eval[string](t, ctx, `document.querySelector('`+name+`').value`), "the new selection's answer starts empty")
	stopTab(t, ctx, console)
}

// o acts on the field the focus is in. From the error summary, in no
// field, it does nothing: it used to tick field 1's Other, silently
// replacing the choice made there. In field 2 it types in field 2's Other.
func TestOFromTheErrorSummaryReplacesNoChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	id := h.ask("s1", "r1", askUserQuestionReq())
	card := "#" + domID(id)
	ctx, console := flowTab(t, h, "")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`label[for="`+string(id)+`-f0-c0"]`)))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(card+` button[data-testid="submit"]`)))
	waitFor(t, ctx, `!!document.querySelector('`+card+` [data-testid="error-summary"]')`, "the error summary (no region chosen)")
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(card+` [data-testid="error-summary"]`)))
	press(t, ctx, "o")
	type choice struct {
		PG     bool   `json:"pg"`
		Other  bool   `json:"other"`
		Focus  string `json:"focus"`
		Region bool   `json:"region"`
	}
	look := `({pg: document.getElementById('` + string(id) + `-f0-c0').checked,
		other: document.getElementById('` + string(id) + `-f0-other-choice').checked,
		focus: document.activeElement.dataset.testid || document.activeElement.id,
		region: document.getElementById('` + string(id) + `-f1-other-choice').checked})`
	assert.Equal(t, choice{PG: true, Focus: "error-summary"}, eval[choice](t, ctx, look), "o from the error summary: nothing changed")

	require.NoError(t, chromedp.Do(ctx, chromedp.Focus("#"+string(id)+"-f1-c0")))
	press(t, ctx, "o")
	assert.Equal(t, choice{PG: true, Focus: string(id) + "-f1-other", Region: true}, eval[choice](t, ctx, look), "o in field 2: field 2's Other")
	assert.Empty(t, h.sub.all(), "nothing sent")
	stopTab(t, ctx, console, h.url("cards/"+string(id)+"/answer"))
}

// A selection emptied (every question unselected, or gone, as after a
// restart) ends its answer: the next selection's answer starts empty,
// not with what was typed for the last one, which would go to every
// question selected. Nor is it kept as a draft across a reload.
func TestBatchFormStartsEmptyAfterTheSelectionEmptied(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts Chromium")
	}
	h := newHarness(t)
	askInOrder(h, nameForm(), nameForm(), nameForm())
	ctx, console := flowTab(t, h, "")
	name := `#batch-region [data-testid="batch"] input[name="f0"]`
	shown := `!!document.querySelector('` + name + `') && document.querySelector('` + name + `').offsetParent !== null`
	press(t, ctx, "j")
	press(t, ctx, "x")
	waitFor(t, ctx, shown, "the batch answer's text box")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(name, "payments")))
	press(t, ctx, kb.Escape)
	press(t, ctx, "x") // unselected: the selection is empty
	press(t, ctx, "j")
	press(t, ctx, "x") // a new selection
	waitFor(t, ctx, shown, "the batch answer's text box again")
	assert.Empty(t, eval[string](t, ctx, `document.querySelector('`+name+`').value`), "the new selection's answer starts empty")

	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(name, "billing")))
	press(t, ctx, kb.Escape)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`[data-testid="tools"]`)))
	press(t, ctx, "j")
	press(t, ctx, "x")
	waitFor(t, ctx, shown, "the batch answer's text box after a reload")
	assert.Empty(t, eval[string](t, ctx, `document.querySelector('`+name+`').value`), "after a reload too")
	assert.False(t, eval[bool](t, ctx, `Object.keys(localStorage).some(k => localStorage.getItem(k).includes('billing'))`),
		"no draft of the batch answer kept in this browser")
	assert.Empty(t, h.sub.all(), "nothing sent")
	stopTab(t, ctx, console)
}
