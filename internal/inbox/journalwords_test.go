package inbox

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// explainedError is a journal error as a database backend gives it: a
// detail for the log, the operator's words in Explain.
type explainedError struct{ detail, words string }

func (e explainedError) Error() string   { return e.detail }
func (e explainedError) Explain() string { return e.words }

// downJournal's database is down: Lookup fails with the driver's detail.
type downJournal struct {
	*MemoryJournal
	err error
}

func (j downJournal) Lookup(string) (Submission, bool, error) { return Submission{}, false, j.err }

// A journal error reaches the page in the operator's words: the
// database's user, name and address stay in the log.
func TestJournalErrorsReachThePageInTheOperatorsWords(t *testing.T) {
	t.Parallel()
	const detail = `failed to connect to user=aep database=answers: 10.0.0.7:5432: dial error`
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"explained": {explainedError{detail: detail, words: "The answer journal's database does not answer."}, "The answer journal's database does not answer."},
		"plain":     {errors.New(detail), "The details are in the server's log."},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, _ := answeringInbox(t, downJournal{NewMemoryJournal(), tc.err})
			in.Apply(command(t, "cmd-1", ownSource, "aepforms", "x"))
			notices := in.Status().Notices
			require.Len(t, notices, 1)
			assert.Contains(t, notices[0].Message, tc.want)
			for _, leak := range []string{"user=aep", "answers", "10.0.0.7", "5432"} {
				assert.NotContains(t, notices[0].Message, leak, "got %q", notices[0].Message)
			}
		})
	}
}
