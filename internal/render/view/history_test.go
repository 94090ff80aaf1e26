package view

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

func historyEntry(s inbox.Submission) store.Entry {
	s.CommandID, s.At = "cmd-1", viewNow
	s.Key = inbox.RequestKey{Source: "aep://a", Session: "s_1", RequestID: "r_1"}
	return store.Entry{Submission: s, Changes: []store.Change{{State: inbox.SubmissionSending, At: viewNow}, {State: s.State, Reason: s.Reason, At: viewNow.Add(time.Second)}}}
}

func TestHistoryRows(t *testing.T) {
	t.Parallel()
	reply := "later"
	for _, tc := range []struct {
		name        string
		sub         inbox.Submission
		wantValues  []RecordedValue
		wantOutcome string
		wantTone    string
	}{
		{
			name: "a form, labelled through its specs",
			sub: inbox.Submission{Fields: []aep.FieldSpec{{ID: "env", Type: aep.FieldSelect, Label: "Environment", Choices: []aep.Choice{{ID: "prod", Label: "Production"}}}},
				Answer: aep.Answer{Values: aep.Values{"env": "prod"}}, State: inbox.SubmissionAccepted},
			wantValues:  []RecordedValue{{Label: "Environment", Value: "Production"}},
			wantOutcome: "Accepted by the agent", wantTone: "success",
		},
		{
			name:        "an option and a reply",
			sub:         inbox.Submission{Answer: aep.Answer{Option: "allow", Text: &reply}, State: inbox.SubmissionFailed, Reason: inbox.ReasonTimeout},
			wantValues:  []RecordedValue{{Label: "Option", Value: "allow"}, {Label: "Reply", Value: "later"}},
			wantOutcome: "Not delivered: no reply from the agent in time; it may still have acted", wantTone: "error",
		},
		{
			name:        "values without specs, by id",
			sub:         inbox.Submission{Answer: aep.Answer{Values: aep.Values{"b": true, "a": "x"}}, State: inbox.SubmissionRejected, Reason: "invalid"},
			wantValues:  []RecordedValue{{Label: "a", Placeholder: true, Value: "x"}, {Label: "b", Placeholder: true, Value: "Yes"}},
			wantOutcome: "Rejected by the agent: invalid", wantTone: "error",
		},
		{
			name:        "a state the history does not know, by its name",
			sub:         inbox.Submission{Answer: aep.Answer{Option: "x"}, State: "parked"},
			wantValues:  []RecordedValue{{Label: "Option", Value: "x"}},
			wantOutcome: "parked", wantTone: "neutral",
		},
		{
			name:        "queued while the relay was away",
			sub:         inbox.Submission{Answer: aep.Answer{Option: "x"}, State: inbox.SubmissionQueued},
			wantValues:  []RecordedValue{{Label: "Option", Value: "x"}},
			wantOutcome: "Queued, waiting for the relay", wantTone: "progress",
		},
		{
			name:        "superseded after a restart",
			sub:         inbox.Submission{Answer: aep.Answer{Option: "x"}, State: inbox.SubmissionSuperseded},
			wantValues:  []RecordedValue{{Label: "Option", Value: "x"}},
			wantOutcome: "Superseded: the question settled first", wantTone: "neutral",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := History(store.HistoryPage{Entries: []store.Entry{historyEntry(tc.sub)}}, HistoryOptions{BasePath: "/"})
			require.Len(t, v.Rows, 1)
			r := v.Rows[0]
			assert.Equal(t, tc.wantValues, r.Values)
			assert.Equal(t, tc.wantOutcome, r.Outcome.Text)
			assert.Equal(t, tc.wantTone, r.Outcome.Tone)
			assert.Equal(t, words.history["no-name"], r.Operator)
			assert.False(t, r.Named)
			assert.Equal(t, "1 Mar 2026 12:00:00 UTC", r.AtTitle)
			assert.Len(t, r.Changes, 2)
		})
	}
}

func TestHistoryAgentText(t *testing.T) {
	t.Parallel()
	s := inbox.Submission{By: "ann\u202Eevil", Agent: "bot\x07", Question: "Ship?\u202E" + strings.Repeat("x", HistoryQuestionRunes), State: inbox.SubmissionAccepted}
	v := History(store.HistoryPage{Entries: []store.Entry{historyEntry(s)}}, HistoryOptions{BasePath: "/forms/"})
	r := v.Rows[0]
	assert.Contains(t, r.Operator, "⟨U+202E⟩", "bidi controls are shown as markers")
	assert.NotContains(t, r.Agent, "\x07")
	assert.Contains(t, r.Question, "⟨U+202E⟩")
	assert.NotEmpty(t, r.QuestionCut, "a long question is shown in part")
	assert.True(t, r.Named)
}

func TestHistoryLinks(t *testing.T) {
	t.Parallel()
	f := HistoryFilter{Agent: "a b", Text: "x&y"}
	v := History(store.HistoryPage{Next: "5.3"}, HistoryOptions{BasePath: "/forms/", Filter: f, After: "9.9"})
	assert.Equal(t, "/forms/history?after=5.3&agent=a+b&q=x%26y", v.NextURL)
	assert.Equal(t, "/forms/history?agent=a+b&q=x%26y", v.NewestURL)
	assert.Equal(t, "/forms/history.csv?agent=a+b&q=x%26y", v.CSVURL)
	assert.Equal(t, "/forms/history.jsonl?agent=a+b&q=x%26y", v.JSONLURL)
	assert.True(t, v.Active)
	assert.True(t, v.More)
	assert.Equal(t, words.history["none-match"], v.Empty)

	off := History(store.HistoryPage{}, HistoryOptions{BasePath: "/", Off: true})
	assert.Equal(t, words.history["off"], off.Off)
	assert.Empty(t, off.Rows)
	only := History(store.HistoryPage{}, HistoryOptions{BasePath: "/", Filter: HistoryFilter{Text: "x"}})
	assert.True(t, only.Active)
	assert.False(t, only.More, "a search alone leaves the other filters closed")
	assert.Equal(t, words.history["none-match"], only.Empty)
	assert.Equal(t, words.history["empty"], History(store.HistoryPage{}, HistoryOptions{BasePath: "/"}).Empty)
}
