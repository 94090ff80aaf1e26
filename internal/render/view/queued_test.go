package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// An answer posted while the relay was away says it is queued (never
// "sent"), with what was chosen, the form locked; one not sent says why.
func TestQueuedStateLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 3, 10, 4, 5, 0, time.UTC)
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.Submission = &inbox.Submission{State: inbox.SubmissionQueued, By: "alice", At: at, Answer: aep.Answer{Text: strp("ship it")}}
	v := Card(c, viewOpts())
	assert.Equal(t, "queued", v.State.Kind)
	assert.Equal(t, "Queued: will be sent when the relay is back", v.State.Text)
	assert.True(t, v.State.Busy)
	require.NotEmpty(t, v.State.Values)
	assert.Equal(t, "ship it", v.State.Values[0].Value, "what was chosen is shown")

	c.Submission = &inbox.Submission{State: inbox.SubmissionNotSent, Reason: inbox.ReasonTooOld, By: "alice", At: at, Answer: aep.Answer{Text: strp("ship it")}}
	s := Card(c, viewOpts()).State
	assert.Equal(t, "not-sent", s.Kind)
	assert.Equal(t, "Queued by alice at 3 Jul 2026 10:04:05 UTC while the relay was away, and not sent: the relay was not back before it was too old to send (--resend-max-age). Answer again only if it still applies.", s.Text)
	assert.NotEmpty(t, s.Values)

	c.State = inbox.StateResolved
	c.Resolution = aep.ResolutionDismissed
	c.Submission = &inbox.Submission{State: inbox.SubmissionSuperseded, By: "alice", At: at}
	s = Card(c, viewOpts()).State
	require.Len(t, s.Notes, 1)
	assert.Equal(t, "The answer queued by alice at 3 Jul 2026 10:04:05 UTC while the relay was away was not sent: this question settled first.", s.Notes[0].Text)
}
