package inbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
)

// CanAnswer is the one answerability rule: every refusal in its order.
func TestCardCanAnswer(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	open := Card{State: StatePending, Request: aep.Request{Kind: aep.KindForm}}
	with := func(f func(c *Card)) Card {
		c := open
		f(&c)
		return c
	}
	tests := []struct {
		name string
		card Card
		want error
	}{
		{"open", open, nil},
		{"routed is open", with(func(c *Card) { c.State = StateRouted }), nil},
		{"a deadline ahead", with(func(c *Card) { c.ExpiresAt = now.Add(time.Second) }), nil},
		{"a deadline reached", with(func(c *Card) { c.ExpiresAt = now }), ErrExpired},
		{"expired by the sweep", with(func(c *Card) { c.State = StateExpired }), ErrExpired},
		{"settled", with(func(c *Card) { c.State = StateAnswered }), ErrSettled},
		{"session ended", with(func(c *Card) { c.State = StateEnded }), ErrSettled},
		{"informational", with(func(c *Card) { c.Informational = true }), ErrInformational},
		{"respond_via without control", with(func(c *Card) { c.Request.RespondVia = []string{"oob"} }), ErrInformational},
		{"malformed before anything", with(func(c *Card) { c.Malformed = "bad"; c.State = StateAnswered }), ErrMalformed},
		{"sending", with(func(c *Card) { c.Submission = &Submission{State: SubmissionSending} }), ErrInFlight},
		{"accepted", with(func(c *Card) { c.Submission = &Submission{State: SubmissionAccepted} }), ErrInFlight},
		{"rejected opens again", with(func(c *Card) { c.Submission = &Submission{State: SubmissionRejected} }), nil},
		{"failed opens again", with(func(c *Card) { c.Submission = &Submission{State: SubmissionFailed} }), nil},
		{"expired outranks in flight", with(func(c *Card) {
			c.ExpiresAt = now.Add(-time.Second)
			c.Submission = &Submission{State: SubmissionSending}
		}), ErrExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.ErrorIs(t, tc.card.CanAnswer(now), tc.want)
			if tc.want == nil {
				assert.NoError(t, tc.card.CanAnswer(now))
				assert.True(t, tc.card.Open(now))
			}
		})
	}
}
