package view

import (
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// viewNow is the clock the view tests render at.
var viewNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func viewF(v float64) *float64 { return &v }

// viewCard is an open card asked a minute before viewNow.
func viewCard(req aep.Request) inbox.Card {
	return inbox.Card{
		ID:         "c1",
		Key:        inbox.RequestKey{Source: "aep://host.example/agents/claude-code/instance-1234567890", Session: "s_1", RequestID: "r_1"},
		Agent:      "claude-code",
		Run:        "run_1",
		Capture:    aep.CaptureFull,
		AskedAt:    viewNow.Add(-time.Minute),
		ReceivedAt: viewNow.Add(-time.Minute),
		Request:    req,
		State:      inbox.StatePending,
		Version:    3,
	}
}

func viewOpts() Options {
	return Options{BasePath: "/forms/", Now: viewNow, Token: "tok", Operator: "op"}
}

// viewForm is a form with one field of every kind.
func viewForm() aep.Request {
	return aep.Request{
		Kind:   aep.KindForm,
		Prompt: "Deploy?",
		Fields: []aep.FieldSpec{
			{ID: "ticket", Type: aep.FieldString, Label: "Ticket", Required: true},
			{ID: "notes", Type: aep.FieldString, Label: "Describe the plan"},
			{ID: "budget", Type: aep.FieldNumber, Label: "Budget", Required: true, Min: viewF(0.5), Max: viewF(2500)},
			{ID: "page", Type: aep.FieldBoolean, Label: "Page on-call", Required: true},
			{ID: "env", Type: aep.FieldSelect, Label: "Environment", Required: true, Choices: []aep.Choice{{ID: "stg", Label: "Staging"}, {ID: "prd", Label: "Production"}}},
			{ID: "db", Type: aep.FieldSelect, Label: "Database", Other: true, Choices: []aep.Choice{{ID: "pg", Label: "PostgreSQL"}}},
			{ID: "tags", Type: aep.FieldSelect, Label: "Tags", Multi: true, Required: true, Other: true, Choices: []aep.Choice{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}},
		},
	}
}

func manyChoices(n int) []aep.Choice {
	out := make([]aep.Choice, n)
	for i := range out {
		out[i] = aep.Choice{ID: "id" + string(rune('a'+i)), Label: "Choice " + string(rune('A'+i))}
	}
	return out
}
