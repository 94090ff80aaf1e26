package samples

import (
	"fmt"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// The emitter the sample events come from, and the time they carry.
const (
	Source = "aep://host.example/agents/deployer/instance-1"
	Agent  = "deployer"
	Time   = "2026-07-03T10:00:00Z"
)

// DeployForm is the golden corpus's s_form request (AEP-0006), as the demo
// agent's deploy scenario asks it: a required service name, a boolean,
// a multi select of regions and a database select with Other, answered
// over the control path. Field ids "name", "staged", "regions" ("1".."3")
// and "db" ("1", "2").
func DeployForm() aep.Request { return agent.DeployForm() }

// EveryFieldForm is a form with one field of every kind and flavour, in
// this order: a required string ("ticket"), an optional string ("notes"),
// a required number from 0.5 to 2500 ("budget"), a required boolean
// ("page"), a required two-choice select ("env": "staging", "prod"), a
// select with Other ("db": "pg", "sqlite"), a required ten-choice select
// ("region") and a required multi select with Other ("notify": "sre",
// "pm"); a two-line prompt; answered over the control path; no deadline.
func EveryFieldForm() aep.Request {
	many := make([]aep.Choice, 0, 10)
	for _, r := range []string{"us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2", "eu-central-1", "ap-south-1", "ap-northeast-1", "sa-east-1"} {
		many = append(many, aep.Choice{ID: r, Label: r})
	}
	return aep.Request{
		Kind:   aep.KindForm,
		Prompt: "Before I deploy the payments service, I need a few details.\nThe change touches the checkout flow.",
		Fields: []aep.FieldSpec{
			{ID: "ticket", Type: aep.FieldString, Label: "Change ticket", Required: true},
			{ID: "notes", Type: aep.FieldString, Label: "Describe the rollback plan"},
			{ID: "budget", Type: aep.FieldNumber, Label: "Budget in USD", Required: true, Min: ptr(0.5), Max: ptr(2500)},
			{ID: "page", Type: aep.FieldBoolean, Label: "Page the on-call engineer", Required: true},
			{ID: "env", Type: aep.FieldSelect, Label: "Environment", Required: true, Choices: []aep.Choice{{ID: "staging", Label: "Staging"}, {ID: "prod", Label: "Production"}}},
			{ID: "db", Type: aep.FieldSelect, Label: "Database", Other: true, Choices: []aep.Choice{{ID: "pg", Label: "PostgreSQL"}, {ID: "sqlite", Label: "SQLite"}}},
			{ID: "region", Type: aep.FieldSelect, Label: "Primary region", Required: true, Choices: many},
			{ID: "notify", Type: aep.FieldSelect, Label: "Who should be told", Multi: true, Other: true, Required: true, Choices: []aep.Choice{{ID: "sre", Label: "SRE"}, {ID: "pm", Label: "Product"}}},
		},
		RespondVia: []string{aep.ViaControl},
	}
}

// Requested is an attention.requested event asking req, with the given
// id, in session at position seq, from Source and Agent at Time, at
// capture full: one compact JSON line, as an emitter posts it. It panics
// when req cannot be encoded (a defect in the caller's sample).
func Requested(id, session string, seq int64, req aep.Request) []byte {
	e, err := aep.Build(aep.Envelope{
		ID: id, Type: "attention.requested", Time: Time, Source: Source, Agent: Agent,
		Session: session, Seq: aep.Int64(seq), Capture: "full", Data: req,
	})
	if err != nil {
		panic(fmt.Sprintf("samples: attention.requested %s: %v", id, err))
	}
	return e.Raw()
}

func ptr(v float64) *float64 { return &v }
