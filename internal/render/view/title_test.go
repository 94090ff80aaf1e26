package view

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// An AskUserQuestion card (AEP's Claude Code mapping: the prompt only
// counts the questions) is headed by its first question, the count kept
// in the quote; any other prompt stays the heading.
func TestAskUserQuestionCardIsHeadedByTheQuestion(t *testing.T) {
	t.Parallel()
	fields := []aep.FieldSpec{
		{ID: "1", Type: aep.FieldSelect, Label: "Database: Which database should the service use?", Choices: []aep.Choice{{ID: "1", Label: "PostgreSQL"}}},
		{ID: "2", Type: aep.FieldSelect, Label: "Regions: Where?", Choices: []aep.Choice{{ID: "1", Label: "eu-west"}}},
	}
	for _, tc := range []struct {
		name, prompt string
		fields       []aep.FieldSpec
		want         string
	}{
		{"two questions", "claude-code asks 2 questions", fields, "Database: Which database should the service use? (and 1 more question)"},
		{"one question", "claude-code asks 1 question", fields[:1], "Database: Which database should the service use?"},
		{"a real prompt", "Before I deploy, a few details", fields, "Before I deploy, a few details"},
		{"another agent's words", "someone asks 2 questions", fields, "someone asks 2 questions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := inbox.Card{ID: "c1", Agent: "claude-code", Capture: aep.CaptureFull,
				Request: aep.Request{Kind: aep.KindForm, Prompt: tc.prompt, Fields: tc.fields}}
			v := card(c, Options{BasePath: "/", Now: viewNow})
			assert.Equal(t, tc.want, v.Title)
		})
	}
}
