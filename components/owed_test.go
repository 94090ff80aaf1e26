package components

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// An owed answer (sent, no reply yet) keeps the card from taking a second
// answer by accident: the state says what happened, "Send the same answer
// again" posts the same command (only with no reply in time: with the
// relay away it is sent again when it is back anyway), and the form is
// only behind "Answer differently", which says the first may still act
// and names the answer it replaces.
func TestCardOwedAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason, text string
		reach        inbox.Reach
		again        bool
	}{
		// The line says what is true now: with the relay connected the
		// answer is not sent again by itself; with it away, it is once
		// the relay is back.
		{inbox.ReasonTimeout, "Sent, no reply from the agent in time; it may still act. Send the same answer again, or answer differently below.", inbox.ReachConnected, true},
		{inbox.ReasonTimeout, "Sent, no reply from the agent in time; it may still act. It is sent again when the relay is back.", inbox.ReachUnknown, true},
		{inbox.ReasonRelayLost, "Sent, no reply yet; will send again when the relay is back", inbox.ReachUnknown, false},
	} {
		t.Run(tc.reason+"/"+tc.reach.String(), func(t *testing.T) {
			t.Parallel()
			c := sample(t, "cperm")
			c.Submission = &inbox.Submission{Token: "t1", CommandID: "cmd-owed", State: inbox.SubmissionSending, Reason: tc.reason,
				Form: url.Values{"option": {"2"}}}
			opts := answerable()
			opts.Reachable = tc.reach
			doc := cardDoc(t, c, opts)
			st := doc.Find(`[data-testid="state"]`)
			assert.Equal(t, "sending", attr(t, st, "data-state"))
			assert.Equal(t, tc.text, squash(st.Find(`[data-testid="state-text"]`).Text()))

			again := doc.Find(`form[data-testid="send-again-form"]`)
			if tc.again {
				require.Equal(t, 1, again.Length())
				assert.Equal(t, "/forms/cards/cperm/again", attr(t, again, "action"))
				assert.Equal(t, "cmd-owed", attr(t, again.Find(`input[name="command"]`), "value"))
			} else {
				assert.Zero(t, again.Length(), "with the relay away there is nothing to send on")
			}

			diff := doc.Find(`details[data-testid="answer-differently"]`)
			require.Equal(t, 1, diff.Length(), "a different answer only behind an explicit control")
			assert.False(t, has(diff, "open"), "closed until the operator opens it")
			assert.Equal(t, "Answer differently", squash(diff.ChildrenFiltered("summary").Text()))
			assert.Contains(t, diff.Find(`[data-testid="differently-warning"]`).Text(), "may still reach the agent and act")
			form := diff.Find(`form[data-testid="answer-form"]`)
			require.Equal(t, 1, form.Length(), "the form is inside the disclosure")
			assert.Equal(t, "cmd-owed", attr(t, form.Find(`input[name="replaces"]`), "value"), "the post names the answer it replaces")
			assert.Equal(t, 1, doc.Find(`form[data-testid="answer-form"]`).Length(), "no other answer form")
		})
	}

	// Simply sending (not owed): no such controls, the form locked.
	c := sample(t, "cperm")
	c.Submission = &inbox.Submission{Token: "t1", CommandID: "cmd-1", State: inbox.SubmissionSending}
	doc := cardDoc(t, c, answerable())
	assert.Zero(t, doc.Find(`[data-testid="answer-differently"], [data-testid="send-again-form"], input[name="replaces"]`).Length())
}
