package components

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// sampleNow is the clock every sample is rendered at.
var sampleNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fptr(v float64) *float64 { return &v }
func sptr(s string) *string   { return &s }

// sampleCard is an open form card asked two minutes before sampleNow.
func sampleCard(id, agent, session string, req aep.Request) inbox.Card {
	return inbox.Card{
		ID:         inbox.CardID(id),
		Key:        inbox.RequestKey{Source: "aep://demo.example/agents/" + agent + "/instance-0001", Session: session, RequestID: "r_" + id},
		Agent:      agent,
		Run:        "run_7",
		Capture:    aep.CaptureFull,
		Severity:   aep.SeverityInfo,
		AskedAt:    sampleNow.Add(-2 * time.Minute),
		ReceivedAt: sampleNow.Add(-2 * time.Minute),
		EventID:    "e_" + id,
		Request:    req,
		State:      inbox.StatePending,
		Version:    1,
	}
}

// sampleCards are cards of every kind and state, open ones first.
func sampleCards() []inbox.Card {
	form := sampleCard("cform", "claude-code", "s_payments", samples.EveryFieldForm())
	form.ExpiresAt = sampleNow.Add(4*time.Minute + 30*time.Second)

	perm := sampleCard("cperm", "claude-code", "s_payments", aep.Request{
		Kind:   aep.KindPermission,
		Prompt: "Run `terraform apply` against production?",
		Options: []aep.Option{
			{ID: "allow_once", Label: "Allow once"},
			{ID: "allow_always", Label: "Always allow"},
			{ID: "deny", Label: "Deny"},
		},
	})
	perm.ExpiresAt = sampleNow.Add(42 * time.Second)
	perm.Severity = aep.SeverityWarning

	input := sampleCard("cinput", "release-bot", "s_notes", aep.Request{Kind: aep.KindInput, Prompt: "What should the release notes headline be?"})

	review := sampleCard("creview", "release-bot", "s_notes", aep.Request{
		Kind:    aep.KindReview,
		Prompt:  "Review the generated changelog for v2.4.0.",
		Options: []aep.Option{{ID: "approve", Label: "Approve"}, {ID: "request_changes", Label: "Request changes"}, {ID: "reject", Label: "Reject"}},
	})

	meta := sampleCard("cmeta", "claude-code", "s_meta", aep.Request{
		Kind:   aep.KindForm,
		Prompt: "claude-code requests form: AskUserQuestion",
		Fields: []aep.FieldSpec{
			{ID: "1", Type: aep.FieldSelect, Label: "1", Required: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
			{ID: "2", Type: aep.FieldSelect, Label: "2", Required: true, Multi: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
		},
	})
	meta.Capture = aep.CaptureMetadata

	bad := sampleCard("cbad", "flaky-agent", "s_x", aep.Request{Kind: aep.KindForm, Prompt: "Pick one", Fields: []aep.FieldSpec{{ID: "a", Type: aep.FieldSelect, Label: "A"}}})
	bad.Malformed = `field "a": a select needs at least one choice`

	oob := sampleCard("coob", "ci-runner", "s_ci", aep.Request{Kind: aep.KindPermission, Prompt: "Approve the pipeline in the CI dashboard.", Options: []aep.Option{{ID: "ok", Label: "Approve"}}, RespondVia: []string{aep.ViaOOB}})
	oob.Informational = true

	text := "staging"
	sending := sampleCard("csending", "deploy-agent", "s_rollout", aep.Request{Kind: aep.KindForm, Prompt: "Which environment first?", Fields: []aep.FieldSpec{{ID: "env", Type: aep.FieldSelect, Label: "Environment", Required: true, Choices: []aep.Choice{{ID: "staging", Label: "Staging"}, {ID: "prod", Label: "Production"}}}}})
	sending.Submission = &inbox.Submission{Token: "t1", CommandID: "cmd1", State: inbox.SubmissionSending, Answer: aep.Answer{Values: aep.Values{"env": text}}, Form: url.Values{"f0": {"0"}}, At: sampleNow}

	accepted := sampleCard("caccepted", "deploy-agent", "s_rollout", aep.Request{Kind: aep.KindInput, Prompt: "Name the release branch."})
	accepted.Submission = &inbox.Submission{Token: "t2", CommandID: "cmd2", State: inbox.SubmissionAccepted, Answer: aep.Answer{Text: sptr("release/2.4")}, Form: url.Values{"text": {"release/2.4"}}}

	rejected := sampleCard("crejected", "deploy-agent", "s_rollout", aep.Request{Kind: aep.KindForm, Prompt: "How many replicas?", Fields: []aep.FieldSpec{{ID: "n", Type: aep.FieldNumber, Label: "Replicas", Required: true, Min: fptr(1), Max: fptr(12)}}})
	rejected.Submission = &inbox.Submission{Token: "t3", CommandID: "cmd3", State: inbox.SubmissionRejected, Reason: aep.ReasonInvalid, Detail: "replicas must be even for the quorum", Form: url.Values{"f0": {"3"}}}

	noroute := sampleCard("cnoroute", "deploy-agent", "s_gone", aep.Request{Kind: aep.KindInput, Prompt: "Confirm the maintenance window."})
	noroute.Submission = &inbox.Submission{Token: "t4", CommandID: "cmd4", State: inbox.SubmissionFailed, Reason: "no-route", Form: url.Values{"text": {"Sunday 02:00 UTC"}}}

	nofields := sampleCard("cnofields", "legacy-agent", "s_old", aep.Request{Kind: aep.KindForm, Prompt: "Anything else before I finish?"})
	vendor := sampleCard("cvendor", "legacy-agent", "s_old", aep.Request{Kind: "com.example.approval", Prompt: "A kind this UI does not know."})

	hostile := sampleCard("chostile", "<b>evil</b>", "s_<i>x</i>", aep.Request{
		Kind:   aep.KindForm,
		Prompt: "Line one\n<script>alert('prompt')</script>\n" + longText(),
		Fields: []aep.FieldSpec{{ID: "x", Type: aep.FieldString, Label: "<script>alert('label')</script>"}},
	})

	answered := sampleCard("canswered", "claude-code", "s_payments", aep.Request{Kind: aep.KindForm, Prompt: "Ship it?", Fields: []aep.FieldSpec{
		{ID: "go", Type: aep.FieldBoolean, Label: "Ship now"},
		{ID: "why", Type: aep.FieldString, Label: "Reason"},
		{ID: "n", Type: aep.FieldNumber, Label: "Canary percent"},
	}})
	answered.State = inbox.StateResolved
	answered.Resolution = aep.ResolutionAnswered
	answered.Recorded = &inbox.Recorded{By: "alice", Via: aep.ViaControl, Capture: aep.CaptureMetadata, Answer: aep.Answer{Values: aep.Values{"go": true, "n": json.Number("12.5")}}}

	elsewhere := sampleCard("celsewhere", "ci-runner", "s_ci", aep.Request{Kind: aep.KindPermission, Prompt: "Merge the PR?", Options: []aep.Option{{ID: "yes", Label: "Merge"}, {ID: "no", Label: "Do not merge"}}})
	elsewhere.State = inbox.StateAnswered
	elsewhere.AnsweredElsewhere = true
	elsewhere.Recorded = &inbox.Recorded{By: "bob", Via: aep.ViaOOB, Capture: aep.CaptureFull, Answer: aep.Answer{Option: "yes"}}

	timedOut := sampleCard("ctimeout", "release-bot", "s_notes", aep.Request{Kind: aep.KindInput, Prompt: "Tag name?"})
	timedOut.State = inbox.StateTimedOut
	timedOut.TimeoutMS = aep.Int64(300000)

	expired := sampleCard("cexpired", "release-bot", "s_notes", aep.Request{Kind: aep.KindInput, Prompt: "Freeze the branch?"})
	expired.State = inbox.StateExpired
	expired.ExpiresAt = sampleNow.Add(-time.Minute)

	ended := sampleCard("cended", "deploy-agent", "s_rollout", aep.Request{Kind: aep.KindInput, Prompt: "Continue?"})
	ended.State = inbox.StateEnded
	ended.SessionEnded = true

	// Answered from this UI: who and when, and its history entry.
	here := sampleCard("chere", "deploy-agent", "s_rollout", aep.Request{Kind: aep.KindPermission, Prompt: "Restart the canary?",
		Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}})
	here.State = inbox.StateAnswered
	here.Recorded = &inbox.Recorded{By: "alice", Via: aep.ViaControl, Capture: aep.CaptureFull, Answer: aep.Answer{Option: "allow"}, Cause: "cmd-here"}
	here.Submission = &inbox.Submission{Card: here.ID, Key: here.Key, CommandID: "cmd-here", By: "alice", State: inbox.SubmissionAccepted,
		At: sampleNow.Add(-3 * time.Minute), SettledAt: sampleNow.Add(-3 * time.Minute), Answer: aep.Answer{Option: "allow"}}

	return []inbox.Card{form, perm, input, review, meta, bad, oob, sending, accepted, rejected, noroute, nofields, vendor, hostile, answered, elsewhere, timedOut, expired, ended, here}
}

func longText() string {
	s := ""
	for i := 1; i <= 12; i++ {
		s += "Step " + string(rune('0'+i%10)) + ": check the logs and confirm nothing regressed.\n"
	}
	return s
}
