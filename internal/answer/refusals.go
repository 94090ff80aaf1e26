package answer

import (
	"errors"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// The Service's own refusals, beside the inbox's.
var (
	// ErrNoToken: the post carries no form token, so it cannot be told
	// apart from a second post of the same form.
	ErrNoToken = errors.New("answer: the post has no form token")
	// ErrInvalid: the answer does not fit the request's fields; the error
	// is a Problems, saying which and why.
	ErrInvalid = errors.New("answer: the answer does not fit the request")
	// ErrNoneChosen: a batch names no question.
	ErrNoneChosen = errors.New("answer: the batch names no question")
	// ErrTooMany: a batch names more than MaxBatch questions.
	ErrTooMany = errors.New("answer: the batch names more questions than one batch may answer")
	// ErrReplaces: a batch names an owed answer to replace; only a card's
	// own "Answer differently" does, under its warning.
	ErrReplaces = errors.New("answer: a batch replaces no owed answer")
	// ErrShape: a batch's question no longer asks the batch's shape.
	ErrShape = errors.New("answer: the question is not of the batch's shape")
	// ErrPlaceholders: a batch's question is answerable alone, but its
	// labels are capture placeholders, which an answer given by label to
	// many questions cannot mean the same to each.
	ErrPlaceholders = errors.New("answer: the question's labels are capture placeholders")
	// ErrClaimed: another operator is on the question ("I’m on it") and
	// the post does not say its operator was told (Post.Over): the
	// answer waits for their confirmation, which names the claimant. A
	// claim informs, it never locks: confirmed, the answer goes.
	ErrClaimed = errors.New("answer: another operator is on the question")
)

// Refusals are every sentinel the Service refuses an answer with
// (Begin, BeginBatch and each BatchItem), tested with errors.Is: the
// inbox's (inbox.ErrOtherInFlight and inbox.ErrPeerQueued are
// inbox.ErrInFlight too, worded apart) and its own. Anything else it
// returns is unexpected.
var Refusals = []error{
	inbox.ErrNotFound, inbox.ErrWatchOnly, inbox.ErrReadOnly, ErrNoToken, ErrInvalid,
	inbox.ErrMalformed, inbox.ErrInformational, inbox.ErrTooManyControls, inbox.ErrExpired, inbox.ErrSettled,
	inbox.ErrOtherInFlight, inbox.ErrPeerQueued, inbox.ErrInFlight,
	inbox.ErrNotRecorded, inbox.ErrInvalidSubmission,
	ErrNoneChosen, ErrTooMany, ErrReplaces, ErrShape, ErrPlaceholders, ErrClaimed,
}

// Problems is ErrInvalid with what the operator must fix, field by field.
type Problems []aep.Problem

func (p Problems) Error() string {
	msgs := make([]string, len(p))
	for i, pr := range p {
		msgs[i] = pr.Message
	}
	return ErrInvalid.Error() + ": " + strings.Join(msgs, "; ")
}

// Is makes Problems an ErrInvalid.
func (p Problems) Is(target error) bool { return target == ErrInvalid }
