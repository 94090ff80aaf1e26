package web

import (
	"net/url"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

func fptr(v float64) *float64 { return &v }

// everyFieldForm is the shared form with one field of every kind and
// flavour, plus a multi select without Other, due at expiresAt.
func everyFieldForm(expiresAt time.Time) aep.Request {
	r := samples.EveryFieldForm()
	r.Fields = append(r.Fields, aep.FieldSpec{ID: "checks", Type: aep.FieldSelect, Label: "Checks to skip", Multi: true, Choices: []aep.Choice{{ID: "lint", Label: "Lint"}, {ID: "e2e", Label: "End-to-end"}}})
	r.ExpiresAt = expiresAt.UTC().Format(time.RFC3339)
	return r
}

// fixture names the cards seedEveryKind made.
type fixture struct {
	Form, Permission, Input, Review, Metadata, Malformed, Informational,
	NoFields, UnknownKind, Hostile, Routed, Answered, Elsewhere, TimedOut,
	Expired, Ended, Sending, Rejected, Failed inbox.CardID
}

// seedEveryKind fills the inbox with a card of every kind and state,
// through events as the feed would deliver them (and submissions as posts
// would record them).
func seedEveryKind(h *harness) fixture {
	h.t.Helper()
	now := h.clk.Now()
	var f fixture
	h.roster.mu.Lock()
	h.roster.up["s_payments"] = true
	h.roster.up["s_gone"] = false
	h.roster.mu.Unlock()

	f.Form = h.ask("s_payments", "r_form", everyFieldForm(now.Add(4*time.Minute+30*time.Second)))
	f.Permission = h.ask("s_payments", "r_perm", aep.Request{
		Kind: aep.KindPermission, Prompt: "Run `terraform apply` against production?",
		Options:   []aep.Option{{ID: "allow_once", Label: "Allow once"}, {ID: "allow_always", Label: "Always allow"}, {ID: "deny", Label: "Deny"}},
		ExpiresAt: now.Add(42 * time.Second).UTC().Format(time.RFC3339),
	})
	f.Input = h.ask("s_notes", "r_input", aep.Request{Kind: aep.KindInput, Prompt: "What should the release notes headline be?"})
	f.Review = h.ask("s_notes", "r_review", aep.Request{Kind: aep.KindReview, Prompt: "Review the generated changelog for v2.4.0.",
		Options: []aep.Option{{ID: "approve", Label: "Approve"}, {ID: "request_changes", Label: "Request changes"}, {ID: "reject", Label: "Reject"}}})
	h.emit(aep.Envelope{ID: "r_meta", Type: "attention.requested", Session: "s_meta", Capture: "metadata", Data: aep.Request{
		Kind: aep.KindForm, Prompt: "deployer requests form",
		Fields: []aep.FieldSpec{
			{ID: "1", Type: aep.FieldSelect, Label: "1", Required: true, Other: true, Choices: []aep.Choice{{ID: "1", Label: "1"}, {ID: "2", Label: "2"}}},
			{ID: "2", Type: aep.FieldString, Label: "2"},
		},
	}})
	f.Metadata = cardID("s_meta", "r_meta")
	f.Malformed = h.ask("s_x", "r_bad", aep.Request{Kind: aep.KindForm, Prompt: "Pick one", Fields: []aep.FieldSpec{{ID: "a", Type: aep.FieldSelect, Label: "A"}}})
	f.Informational = h.ask("s_ci", "r_oob", aep.Request{Kind: aep.KindPermission, Prompt: "Approve the pipeline in the CI dashboard.",
		Options: []aep.Option{{ID: "ok", Label: "Approve"}}, RespondVia: []string{aep.ViaOOB}})
	f.NoFields = h.ask("s_old", "r_nofields", aep.Request{Kind: aep.KindForm, Prompt: "Anything else before I finish?"})
	f.UnknownKind = h.ask("s_old", "r_vendor", aep.Request{Kind: "com.example.approval", Prompt: "A kind this UI does not know."})
	f.Hostile = h.ask("s_<i>x</i>", "r_hostile", aep.Request{Kind: aep.KindForm,
		Prompt: "Line one\n<script>alert('prompt')</script>\n" + strings.Repeat("Check the logs and confirm nothing regressed.\n", 12),
		Fields: []aep.FieldSpec{{ID: "x", Type: aep.FieldString, Label: "<script>alert('label')</script>"}}})

	f.Routed = h.ask("s_gone", "r_routed", aep.Request{Kind: aep.KindInput, Prompt: "Confirm the maintenance window."})
	h.emit(aep.Envelope{ID: "route1", Type: "attention.routed", Session: "s_gone", Subject: "r_routed", Cause: "r_routed",
		Source: "aep://test.example/sinks/pager", Agent: "pager", Data: aep.Routed{To: "on-call", Via: "pager"}})

	f.Answered = h.ask("s_payments", "r_answered", aep.Request{Kind: aep.KindForm, Prompt: "Ship it?", Fields: []aep.FieldSpec{
		{ID: "go", Type: aep.FieldBoolean, Label: "Ship now"},
		{ID: "why", Type: aep.FieldString, Label: "Reason"},
		{ID: "n", Type: aep.FieldNumber, Label: "Canary percent"},
	}})
	h.lifecycle("s_payments", "r_answered", "attention.answered", map[string]any{
		"answer": map[string]any{"values": map[string]any{"go": true, "why": "green", "n": 12.5}}, "by": "alice", "via": aep.ViaControl})
	h.lifecycle("s_payments", "r_answered", "attention.resolved", aep.Resolved{Resolution: aep.ResolutionAnswered, LatencyMS: aep.Int64(5300)})

	f.Elsewhere = h.ask("s_ci", "r_elsewhere", aep.Request{Kind: aep.KindPermission, Prompt: "Merge the PR?",
		Options: []aep.Option{{ID: "yes", Label: "Merge"}, {ID: "no", Label: "Do not merge"}}})
	h.lifecycle("s_ci", "r_elsewhere", "attention.answered", map[string]any{"answer": map[string]any{"option": "yes"}, "by": "bob", "via": aep.ViaOOB})

	f.TimedOut = h.ask("s_notes", "r_timeout", aep.Request{Kind: aep.KindInput, Prompt: "Tag name?"})
	h.lifecycle("s_notes", "r_timeout", "attention.timeout", aep.Timeout{AfterMS: aep.Int64(300000)})

	f.Expired = h.ask("s_notes", "r_expired", aep.Request{Kind: aep.KindInput, Prompt: "Freeze the branch?",
		ExpiresAt: now.Add(-time.Minute).UTC().Format(time.RFC3339)})

	f.Ended = h.ask("s_ended", "r_ended", aep.Request{Kind: aep.KindInput, Prompt: "Continue?"})
	h.emit(aep.Envelope{ID: "end1", Type: "session.ended", Session: "s_ended", Data: map[string]any{}})

	f.Sending = h.ask("s_rollout", "r_sending", aep.Request{Kind: aep.KindForm, Prompt: "Which environment first?",
		Fields: []aep.FieldSpec{{ID: "env", Type: aep.FieldSelect, Label: "Environment", Required: true, Choices: []aep.Choice{{ID: "staging", Label: "Staging"}, {ID: "prod", Label: "Production"}}}}})
	h.begin(f.Sending, "cmd_sending", url.Values{"f0": {"0"}}, aep.Answer{Values: aep.Values{"env": "staging"}})

	f.Rejected = h.ask("s_rollout", "r_rejected", aep.Request{Kind: aep.KindForm, Prompt: "How many replicas?",
		Fields: []aep.FieldSpec{{ID: "n", Type: aep.FieldNumber, Label: "Replicas", Required: true, Min: fptr(1), Max: fptr(12)}}})
	h.begin(f.Rejected, "cmd_rejected", url.Values{"f0": {"3"}}, aep.Answer{Values: aep.Values{"n": 3}})
	h.emit(aep.Envelope{ID: "nack1", Type: "control.rejected", Session: "s_rollout", Cause: "cmd_rejected",
		Data: aep.Rejected{Reason: aep.ReasonInvalid, Detail: "replicas must be even for the quorum"}})

	f.Failed = h.ask("s_gone", "r_failed", aep.Request{Kind: aep.KindInput, Prompt: "Name the release branch."})
	h.begin(f.Failed, "cmd_failed", url.Values{"text": {"release/2.4"}}, aep.Answer{Text: ptr("release/2.4")})
	h.in.SettleSubmission(f.Failed, "cmd_failed", inbox.SubmissionFailed, "no-route", "")

	h.in.Sweep()
	return f
}

// begin records a submission on a card as an answer post would.
func (h *harness) begin(id inbox.CardID, cmd string, form url.Values, a aep.Answer) {
	h.t.Helper()
	_, err := h.in.BeginSubmission(id, inbox.Submission{Token: "tok-" + cmd, CommandID: cmd, Form: form, Answer: a, By: "alice"})
	require.NoError(h.t, err)
}

func ptr[T any](v T) *T { return &v }
