package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
)

// TestEveryRefusalHasARow walks the refusal table: every sentinel the
// answer service refuses with has its own row (not a broader one's: the
// first match decides), a status, words the operator reads (our own
// fault aside, which is logged, not explained) and a batch outcome line.
func TestEveryRefusalHasARow(t *testing.T) {
	t.Parallel()
	for _, err := range answer.Refusals {
		t.Run(err.Error(), func(t *testing.T) {
			row := refusalOf(err)
			if !assert.True(t, row.err == err, "%v is refused by the row of %v", err, row.err) {
				return
			}
			assert.GreaterOrEqual(t, row.status, 400)
			assert.NotEmpty(t, row.outcomeLine(err, inbox.Verdict{}), "no batch outcome line")
			if row.status == http.StatusInternalServerError {
				return
			}
			probs := row.problems(err, inbox.Verdict{})
			if assert.Len(t, probs, 1) {
				assert.NotEmpty(t, probs[0].Message, "no words")
				assert.NotEmpty(t, probs[0].Code, "no code")
			}
		})
	}
	for _, row := range refusals {
		assert.Contains(t, answer.Refusals, row.err, "a row for %v, which the answer service never refuses with", row.err)
	}
	for _, err := range []error{inbox.ErrNoClaimant, errNoSuchAssignee, errNoSuchTeam} {
		rec := httptest.NewRecorder()
		refuseMark(rec, namedRefusal{err, "bob"})
		assert.Contains(t, []int{http.StatusConflict, http.StatusUnprocessableEntity}, rec.Code, "a claim's or assignment's refusal %v", err)
		assert.NotContains(t, rec.Body.String(), "%", "words with the name in: %s", rec.Body.String())
	}
}
