package components

import (
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// lookAlikeCard asks to pick one of three choices that render alike
// without markers (the attack run's finding).
func lookAlikeCard() inbox.Card {
	return sampleCard("calike", "claude-code", "s_ops", aep.Request{
		Kind: aep.KindForm, Prompt: "What should I run?",
		Fields: []aep.FieldSpec{{ID: "cmd", Type: aep.FieldSelect, Label: "Command\x00", Required: true, Choices: []aep.Choice{
			{ID: "a", Label: "delete prod"}, {ID: "b", Label: "\u202edorp eteled\u202c"}, {ID: "c", Label: "dele\u200bte prod"},
		}}},
	})
}

func TestLookAlikeChoicesShowMarkersAndAWarning(t *testing.T) {
	t.Parallel()
	doc := cardDoc(t, lookAlikeCard(), answerable())
	field := doc.Find(`[data-testid="field"][data-name="f0"]`)
	require.Equal(t, 1, field.Length())
	var labels []string
	field.Find(`.choices .check__label`).Each(func(_ int, s *goquery.Selection) { labels = append(labels, s.Text()) })
	assert.Equal(t, []string{"delete prod", "⟨U+202E⟩dorp eteled⟨U+202C⟩", "dele⟨U+200B⟩te prod"}, labels)
	warning := field.Find(`[data-testid="look-alike"]`)
	require.Equal(t, 1, warning.Length(), "the look-alike warning")
	assert.Contains(t, warning.Text(), "These choices look alike")
	field.Find(`.choices .check__label`).Each(func(_ int, s *goquery.Selection) {
		assert.Equal(t, 1, s.Find("bdi").Length(), "choice label %q: want it in a <bdi>", s.Text())
	})
}

func TestNULInALabelBecomesReplacementCharacter(t *testing.T) {
	t.Parallel()
	html := renderHTML(t, CardFragment(view.Card(lookAlikeCard(), answerable())))
	assert.NotContains(t, html, "\x00", "no NUL byte reaches the HTML")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	require.NoError(t, err)
	assert.Equal(t, "Command\uFFFD", doc.Find(`[data-name="f0"] legend bdi`).Text())
}

func TestAgentNameCannotReorderTheUIsWords(t *testing.T) {
	t.Parallel()
	const name = "evil\u202eagent" // an unterminated RIGHT-TO-LEFT OVERRIDE
	open := sampleCard("crlo", name, "s_rlo", aep.Request{Kind: aep.KindInput, Prompt: "Hello\u202e"})
	settled := sampleCard("crlo2", name, "s_rlo", aep.Request{Kind: aep.KindInput, Prompt: "Hello"})
	settled.State = inbox.StateAnswered
	settled.Recorded = &inbox.Recorded{By: "op\u202e", Via: "control", Capture: aep.CaptureFull, Answer: aep.Answer{Text: sptr("yes")}}
	opts := answerable()
	opts.Reachable = inbox.ReachNotConnected

	t.Run("provenance and prompt", func(t *testing.T) {
		t.Parallel()
		doc := cardDoc(t, open, opts)
		agent := doc.Find(`[data-testid="prov-agent"]`)
		isolated := agent.Find(`bdi[data-testid="agent-name"]`)
		require.Equal(t, 1, isolated.Length(), "the agent name sits in a <bdi>")
		assert.Equal(t, name, isolated.Text())
		reach := agent.Find(`.reach`)
		require.Equal(t, 1, reach.Length())
		assert.Equal(t, 0, reach.ParentsFiltered("bdi").Length(), "the UI's %q is outside the isolate", reach.Text())
		assert.Equal(t, "not connected", reach.Text())

		q := doc.Find(`h3 [data-testid="question"]`)
		assert.True(t, q.Is("bdi"), "the question is its own isolate")
		assert.Equal(t, "Hello\u202e", q.Text())
		assert.Equal(t, 0, q.Find(`[data-testid="kind"]`).Length(), "the UI's kind tag is outside the isolate")

		multi := sampleCard("crlo3", name, "s_rlo", aep.Request{Kind: aep.KindInput, Prompt: "Hi\n\nHello\u202e *there*"})
		doc = cardDoc(t, multi, opts)
		assert.Equal(t, "auto", attr(t, doc.Find(`[data-testid="prompt"] p`), "dir"), "each block of the prompt is its own isolate")
	})
	t.Run("settled card", func(t *testing.T) {
		t.Parallel()
		doc := cardDoc(t, settled, opts)
		assert.Equal(t, name, doc.Find(`.card__meta bdi[data-testid="agent-name"]`).Text())
		state := doc.Find(`[data-testid="state-text"]`)
		assert.Equal(t, "Answered by op\u202e from this page", state.Text())
		var isolated []string
		state.Find("bdi").Each(func(_ int, s *goquery.Selection) { isolated = append(isolated, s.Text()) })
		assert.Equal(t, []string{"op\u202e"}, isolated, "the recorder's words are isolated, the UI's are not")
	})
}

func TestStateLineSaysOtherWasSentAsAChoice(t *testing.T) {
	t.Parallel()
	c := sampleCard("cdeploy", "deploy-agent", "s_deploy", samples.DeployForm())
	c.Submission = &inbox.Submission{State: inbox.SubmissionSending,
		Form:   url.Values{"f0": {"billing"}, "f3": {"other"}, "f3-other": {"sqlite"}},
		Answer: aep.Answer{Values: aep.Values{"name": "billing", "staged": false, "regions": []any{}, "db": "2"}}}
	doc := cardDoc(t, c, answerable())
	note := doc.Find(`[data-testid="state-note"]`)
	require.Equal(t, 1, note.Length())
	assert.Equal(t, "Other “sqlite” was sent as the choice “SQLite”", note.Text())
	assert.Equal(t, 2, note.Find("bdi").Length())
}

func TestLookAlikeOptionsShowAWarning(t *testing.T) {
	t.Parallel()
	c := sampleCard("cperm2", "claude-code", "s_ops", aep.Request{Kind: aep.KindPermission, Prompt: "Run it?",
		Options: []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Al\u200blow"}}})
	doc := cardDoc(t, c, answerable())
	assert.Equal(t, 1, doc.Find(`[data-testid="look-alike"]`).Length(), "the look-alike warning above the options")
	var labels []string
	doc.Find(`[data-testid="option"] bdi`).Each(func(_ int, s *goquery.Selection) { labels = append(labels, s.Text()) })
	assert.Equal(t, []string{"Allow", "Al⟨U+200B⟩low"}, labels)
}
