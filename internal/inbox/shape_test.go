package inbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// Two requests share a shape only when they ask the same thing the same
// way: kind, options by id and label in order, field specs.
func TestShapeOf(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	perm := aep.Request{Kind: "permission", Prompt: "Run rm?", Options: []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}}
	form := aep.Request{Kind: "form", Prompt: "Where?", Fields: []aep.FieldSpec{
		{ID: "region", Type: "select", Label: "Region", Required: true, Choices: []aep.Choice{{ID: "eu", Label: "EU"}, {ID: "us", Label: "US"}}},
		{ID: "n", Type: "number", Label: "Count", Min: f(1), Max: f(9)},
	}}
	with := func(r aep.Request, fn func(*aep.Request)) aep.Request {
		r.Options = append([]aep.Option(nil), r.Options...)
		r.Fields = append([]aep.FieldSpec(nil), r.Fields...)
		for i := range r.Fields {
			r.Fields[i].Choices = append([]aep.Choice(nil), r.Fields[i].Choices...)
		}
		fn(&r)
		return r
	}
	tests := []struct {
		name string
		a, b aep.Request
		same bool
	}{
		{"another prompt, agent-free: same", perm, with(perm, func(r *aep.Request) { r.Prompt = "Run ls?" }), true},
		{"another deadline: same", perm, with(perm, func(r *aep.Request) { r.ExpiresAt = "2030-01-01T00:00:00Z" }), true},
		{"another kind", perm, with(perm, func(r *aep.Request) { r.Kind = "review" }), false},
		{"an option's label", perm, with(perm, func(r *aep.Request) { r.Options[0].Label = "Allow once" }), false},
		{"an option's id", perm, with(perm, func(r *aep.Request) { r.Options[0].ID = "yes" }), false},
		{"options in another order", perm, with(perm, func(r *aep.Request) { r.Options[0], r.Options[1] = r.Options[1], r.Options[0] }), false},
		{"one option more", perm, with(perm, func(r *aep.Request) { r.Options = append(r.Options, aep.Option{ID: "x", Label: "X"}) }), false},
		{"label text that reads as two", aep.Request{Kind: "k", Options: []aep.Option{{ID: "a", Label: "b1:c"}}},
			aep.Request{Kind: "k", Options: []aep.Option{{ID: "a", Label: "b"}, {ID: "c", Label: ""}}}, false},
		{"a form, another prompt: same", form, with(form, func(r *aep.Request) { r.Prompt = "Elsewhere?" }), true},
		{"a field's label", form, with(form, func(r *aep.Request) { r.Fields[0].Label = "Zone" }), false},
		{"a field required", form, with(form, func(r *aep.Request) { r.Fields[1].Required = true }), false},
		{"a choice's label", form, with(form, func(r *aep.Request) { r.Fields[0].Choices[1].Label = "USA" }), false},
		{"a bound", form, with(form, func(r *aep.Request) { r.Fields[1].Max = f(10) }), false},
		{"a bound dropped", form, with(form, func(r *aep.Request) { r.Fields[1].Min = nil }), false},
		{"multi", form, with(form, func(r *aep.Request) { r.Fields[0].Multi = true }), false},
		{"other", form, with(form, func(r *aep.Request) { r.Fields[0].Other = true }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := ShapeOf(tc.a), ShapeOf(tc.b)
			require.NotEmpty(t, a)
			assert.Equal(t, tc.same, a == b)
			assert.Equal(t, tc.same, a.ID() == b.ID())
			assert.Regexp(t, `^[0-9a-f]{16}$`, a.ID())
		})
	}
	assert.Empty(t, ShapeOf(aep.Request{}))
	assert.Empty(t, Shape("").ID())
}

// A card may join a batch only while this viewer can answer it and its
// labels are real.
func TestVerdictBatchable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	req := aep.Request{Kind: "permission", Options: []aep.Option{{ID: "allow", Label: "Allow"}}}
	open := Card{State: StatePending, Capture: aep.CaptureFull, Request: req, Shape: ShapeOf(req)}
	with := func(f func(c *Card)) Card {
		c := open
		f(&c)
		return c
	}
	tests := []struct {
		name string
		card Card
		want bool
	}{
		{"pending", open, true},
		{"routed", with(func(c *Card) { c.State = StateRouted }), true},
		{"redacted capture keeps labels", with(func(c *Card) { c.Capture = aep.CaptureRedacted }), true},
		{"a failed answer opens it again", with(func(c *Card) { c.Submission = &Submission{State: SubmissionFailed} }), true},
		{"capture placeholders", with(func(c *Card) { c.Capture = aep.CaptureMetadata }), false},
		{"no shape", with(func(c *Card) { c.Shape = "" }), false},
		{"answered", with(func(c *Card) { c.State = StateAnswered }), false},
		{"past its deadline", with(func(c *Card) { c.ExpiresAt = now }), false},
		{"mid-submission", with(func(c *Card) { c.Submission = &Submission{State: SubmissionSending} }), false},
		{"queued", with(func(c *Card) { c.Submission = &Submission{State: SubmissionQueued} }), false},
		{"another sender's answer on its way", with(func(c *Card) { c.Responders = []Responder{{CommandID: "x"}} }), false},
		{"informational", with(func(c *Card) { c.Informational = true }), false},
		{"malformed", with(func(c *Card) { c.Malformed = "bad" }), false},
		{"over budget", with(func(c *Card) { c.OverBudget = true }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.card.Verdict(now, Viewer{}).Batchable)
			assert.False(t, tc.card.Verdict(now, Viewer{WatchOnly: true}).Batchable, "watch-only batches nothing")
		})
	}
}

// The inbox sets a card's shape from its request, and heads carry it
// (a page groups thousands of cards by shape without copying requests).
func TestInboxCardShape(t *testing.T) {
	t.Parallel()
	in, _ := newTestInbox(t)
	in.Apply(request(t, "r1", 1, formData("")))
	in.Apply(request(t, "r2", 2, formData("")))
	c, ok := in.Card(cardIDOf("r1"))
	require.True(t, ok)
	require.NotEmpty(t, c.Shape)
	assert.Equal(t, ShapeOf(c.Request), c.Shape)
	heads := in.Heads(Query{})
	require.Len(t, heads, 2)
	assert.Equal(t, c.Shape, heads[0].Shape)
	assert.Equal(t, c.Shape, heads[1].Shape)
}
