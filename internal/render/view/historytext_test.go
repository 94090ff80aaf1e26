package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// History speaks the operator's words: the question as plain text (not
// raw Markdown), Other text marked as typed in the export's words, and
// the row's agent and session as links that filter by them.
func TestHistoryInTheOperatorsWords(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Deploy payments to production?\n\n• run the migrations\n• page on-call",
		QuestionText("**Deploy** `payments` to [production](https://x.example)?\n\n- run the migrations\n- page on-call"))

	s := inbox.Submission{
		Agent: "deployer", Question: "# Where?", State: inbox.SubmissionAccepted,
		Kind: aep.KindForm, Fields: []aep.FieldSpec{
			{ID: "branch", Type: aep.FieldSelect, Label: "Branch", Choices: []aep.Choice{{ID: "release", Label: "release/2.4"}}},
			{ID: "regions", Type: aep.FieldSelect, Multi: true, Other: true, Label: "Regions", Choices: []aep.Choice{{ID: "1", Label: "eu-west"}}},
		},
		Answer: aep.Answer{Values: aep.Values{"branch": "release", "regions": []any{"1", "eu-central"}}},
	}
	assert.Equal(t, "Branch: release/2.4; Regions: eu-west, Other: “eu-central”", AnswerWords(s, s.Answer))

	v := History(store.HistoryPage{Entries: []store.Entry{historyEntry(s)}}, HistoryOptions{BasePath: "/forms/"})
	require.Len(t, v.Rows, 1)
	r := v.Rows[0]
	assert.Equal(t, "Where?", r.Question, "the heading's words, not its #")
	assert.Equal(t, "/forms/history?agent=deployer", r.AgentURL)
	assert.Equal(t, "/forms/history?session=s_1", r.SessionURL, "the full session, whatever the row shows")
	assert.False(t, r.ShowBy, "no operator secret and no name: nothing said of who answered")
}
