package view

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

func TestPromptBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prompt  string
		budget  int
		cut     bool
		wantLen int // bytes of Text
		whole   string
	}{
		{"within the default", strings.Repeat("a", DefaultPromptBytes), 0, false, DefaultPromptBytes, ""},
		{"one byte over the default", strings.Repeat("a", DefaultPromptBytes+1), 0, true, DefaultPromptBytes, "16 KiB"},
		{"8 MB", strings.Repeat("a", 8<<20), 0, true, DefaultPromptBytes, "8.0 MiB"},
		{"a configured budget", strings.Repeat("a", 100), 10, true, 10, "100 bytes"},
		{"never inside a character", "ab" + strings.Repeat("é", 10), 5, true, 4, "22 bytes"},
		{"at a line break near the end", "0123456789\n1234567", 13, true, 11, "18 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := viewOpts()
			opts.PromptBytes = tc.budget
			v := Card(viewCard(aep.Request{Kind: aep.KindInput, Prompt: tc.prompt}), opts)
			assert.Len(t, v.Prompt.Text, tc.wantLen)
			assert.True(t, strings.HasPrefix(tc.prompt, v.Prompt.Text))
			if !tc.cut {
				assert.Nil(t, v.Prompt.Cut)
				return
			}
			require.NotNil(t, v.Prompt.Cut)
			assert.True(t, v.Prompt.Long, "a cut prompt is collapsed too")
			assert.Equal(t, "/forms/cards/c1/prompt", v.Prompt.Cut.URL)
			assert.Equal(t, tc.whole, v.Prompt.Cut.Whole)
			assert.NotNil(t, v.Form, "a large prompt never makes a request unanswerable")
		})
	}
}

// A card over the control budget shows no form: its state line says why
// and what to do, and an answer post to it is refused in the same words'
// spirit.
func TestOverBudgetCardIsReadOnly(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindForm, Prompt: "Pick", Fields: []aep.FieldSpec{{ID: "a", Type: aep.FieldSelect, Label: "A", Choices: manyChoices(3)}}}
	c := viewCard(req)
	c.Controls, c.OverBudget = 449_550, true
	v := Card(c, viewOpts())
	assert.Nil(t, v.Form)
	assert.Equal(t, "over-budget", v.State.Kind)
	assert.Equal(t, "Too many options to show safely: 449\u00a0550; answer it in the agent's own interface.", v.State.Text)
	assert.True(t, v.Open)

	r, ok := RefusalOf(c.CanAnswer(viewNow), c.Verdict(viewNow, inbox.Viewer{}))
	require.True(t, ok)
	assert.Equal(t, "over_budget", r.Code)
}

func TestDropLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		st   inbox.Status
		want string
	}{
		{"none", inbox.Status{}, ""},
		{"one agent", inbox.Status{Dropped: []inbox.Dropped{{Agent: "kimi-code", Count: 5500}}},
			"The inbox was full. kimi-code: 5\u00a0500 questions dropped, oldest first."},
		{"one question", inbox.Status{Dropped: []inbox.Dropped{{Agent: "a", Count: 1}}},
			"The inbox was full. a: 1 question dropped, oldest first."},
		{"many agents", inbox.Status{Dropped: drops("a", 9, "b", 8, "c", 7, "d", 6, "e", 5, "f", 4), DroppedOthers: 2},
			"The inbox was full. a: 9 questions dropped; b: 8 questions dropped; c: 7 questions dropped; d: 6 questions dropped; e: 5 questions dropped; other agents: 6 questions dropped, oldest first."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, dropLine(tc.st))
			p := Page(nil, tc.st, PageOptions{})
			if tc.want == "" {
				assert.Empty(t, p.Notices)
			} else {
				assert.Equal(t, []string{tc.want}, p.Notices, "one status line")
			}
		})
	}
}

func TestFormatCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[uint64]string{0: "0", 999: "999", 5500: "5\u00a0500", 12345: "12\u00a0345", 449550: "449\u00a0550", 1234567: "1\u00a0234\u00a0567"} {
		assert.Equal(t, want, formatCount(n), "%d", n)
	}
}

// drops lists agent, count pairs as drop counts.
func drops(pairs ...any) []inbox.Dropped {
	var out []inbox.Dropped
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, inbox.Dropped{Agent: pairs[i].(string), Count: uint64(pairs[i+1].(int))})
	}
	return out
}
