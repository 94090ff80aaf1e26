package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A batch result says each group as it is: sent, queued while the relay
// is away, kept but not delivered, not sent; its heading claims "sent"
// only when every answer was.
func TestBatchResultSaysEachGroupAsItIs(t *testing.T) {
	t.Parallel()
	sent := BatchOutcome{ID: "a", Sent: true, Kind: "sending", Tone: "progress", Line: "Sent, waiting for the agent"}
	queued := BatchOutcome{ID: "b", Sent: true, Kind: "queued", Tone: "progress", Line: "Queued: will be sent when the relay is back"}
	failed := BatchOutcome{ID: "c", Sent: true, Kind: "failed", Tone: "error", Line: "Not sent; your answer is kept."}
	refused := BatchOutcome{ID: "d", Line: "Not sent: this question is no longer in the inbox"}
	for _, tc := range []struct {
		name             string
		in               []BatchOutcome
		heading, summary string
		order            []string
	}{
		{"all sent", []BatchOutcome{sent}, "Answers sent", "Sent to 1 question. Each question shows what became of its answer.", []string{"a"}},
		{"all queued", []BatchOutcome{queued, queued}, "Answers queued", "Queued for 2 questions until the relay is back. Each question shows what became of its answer.", []string{"b", "b"}},
		{"sent and queued", []BatchOutcome{queued, sent}, "Answers sent and queued", "Sent to 1 question; queued for 1 question until the relay is back. Each question shows what became of its answer.", []string{"b", "a"}},
		{"kept, not delivered", []BatchOutcome{sent, failed}, "Some answers not sent", "Sent to 1 question; kept for 1 question but not delivered, listed first with why.", []string{"c", "a"}},
		{"refused", []BatchOutcome{sent, queued, failed, refused}, "Some answers not sent",
			"Sent to 1 question; queued for 1 question until the relay is back; kept for 1 question but not delivered; not sent to 1 question, listed first with why.", []string{"d", "c", "a", "b"}},
		{"none", []BatchOutcome{refused}, "Nothing sent", "Nothing was sent: none of the 1 question could take this answer.", []string{"d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := BatchResult(append([]BatchOutcome(nil), tc.in...), BatchOptions{})
			assert.Equal(t, tc.heading, v.Heading)
			assert.Equal(t, tc.summary, v.Summary)
			var order []string
			for _, o := range v.Outcomes {
				order = append(order, o.ID)
			}
			assert.Equal(t, tc.order, order)
		})
	}
}
