package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// refusal is how the UI answers one of the answer service's refusals
// (answer.Refusals): the status of a post it refuses, its words, and its
// line in a batch's outcome list.
type refusal struct {
	err    error
	status int
	// words say it to the operator; nil words it as the card's state
	// says it (view.RefusalOf).
	words func(err error, vd inbox.Verdict) view.Refusal
	// line is a batch's outcome line for a question it refuses (a
	// view.BatchWord key); "" is "Not sent: " and its words.
	line string
}

// refusals map every refusal of the answer service to its status and
// words, the first row that matches (errors.Is) deciding: a post refused
// for something the operator did not cause is 409 (the card can no
// longer take it), one they can fix 422, a malformed post 400; a
// question the inbox no longer holds is 404 (its own page), an answer
// the journal did not keep 503 (send it again), and a submission the
// inbox calls invalid a fault of ours (500, logged). Any error that
// matches no row is unexpected: 500.
var refusals = []refusal{
	{err: inbox.ErrNotFound, status: http.StatusNotFound, words: said(view.RefusalGone), line: "gone"},
	{err: inbox.ErrWatchOnly, status: http.StatusConflict},
	{err: inbox.ErrReadOnly, status: http.StatusForbidden},
	{err: answer.ErrNoToken, status: http.StatusBadRequest, words: said(view.RefusalNoToken)},
	{err: answer.ErrInvalid, status: http.StatusUnprocessableEntity, words: firstProblem},
	{err: inbox.ErrMalformed, status: http.StatusConflict},
	{err: inbox.ErrInformational, status: http.StatusConflict},
	{err: inbox.ErrTooManyControls, status: http.StatusConflict},
	{err: inbox.ErrExpired, status: http.StatusConflict},
	{err: inbox.ErrSettled, status: http.StatusConflict},
	{err: inbox.ErrOtherInFlight, status: http.StatusConflict},
	{err: inbox.ErrPeerQueued, status: http.StatusConflict},
	{err: inbox.ErrInFlight, status: http.StatusConflict},
	{err: inbox.ErrNotRecorded, status: http.StatusServiceUnavailable},
	{err: inbox.ErrInvalidSubmission, status: http.StatusInternalServerError, line: "broken"},
	{err: answer.ErrNoneChosen, status: http.StatusUnprocessableEntity, words: batchSaid("none-chosen")},
	{err: answer.ErrTooMany, status: http.StatusRequestEntityTooLarge, words: tooMany},
	{err: answer.ErrReplaces, status: http.StatusBadRequest, words: batchSaid("replaces")},
	{err: answer.ErrShape, status: http.StatusConflict, words: batchSaid("shape"), line: "shape"},
	{err: answer.ErrPlaceholders, status: http.StatusConflict, words: batchSaid("placeholders"), line: "placeholders"},
	{err: answer.ErrClaimed, status: http.StatusConflict, words: claimedBy},
}

// unexpected is the row of an error no refusal matches.
var unexpected = refusal{status: http.StatusInternalServerError, line: "broken"}

// refusalOf is err's row of refusals, or unexpected.
func refusalOf(err error) refusal {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r
		}
	}
	return unexpected
}

// problems are what the operator reads of a refused post to the card
// whose verdict is vd, in the card's error summary: each of an answer's
// problems, or the one refusal.
func (r refusal) problems(err error, vd inbox.Verdict) []aep.Problem {
	var probs answer.Problems
	if errors.As(err, &probs) {
		return probs
	}
	why := r.say(err, vd)
	return []aep.Problem{{Code: why.Code, Message: why.Message}}
}

// say words err for the card whose verdict is vd.
func (r refusal) say(err error, vd inbox.Verdict) view.Refusal {
	if r.words != nil {
		return r.words(err, vd)
	}
	why, _ := view.RefusalOf(err, vd)
	return why
}

// outcomeLine is a batch's outcome line for a question refused with err.
func (r refusal) outcomeLine(err error, vd inbox.Verdict) string {
	if r.line != "" {
		return view.BatchWord(r.line)
	}
	return "Not sent: " + r.problems(err, vd)[0].Message
}

// said words a refusal as why, whatever the card.
func said(why view.Refusal) func(error, inbox.Verdict) view.Refusal {
	return func(error, inbox.Verdict) view.Refusal { return why }
}

// batchSaid words a refusal of a batch, whole or of one of its
// questions, as the batch page says it.
func batchSaid(key string) func(error, inbox.Verdict) view.Refusal {
	return func(error, inbox.Verdict) view.Refusal {
		return view.Refusal{Code: "batch", Message: view.BatchWord(key)}
	}
}

func tooMany(error, inbox.Verdict) view.Refusal {
	return view.Refusal{Code: "batch", Message: strings.ReplaceAll(view.BatchWord("too-many"), "{max}", strconv.Itoa(MaxBatch))}
}

// firstProblem words an answer's problems by the first (a batch's
// outcome line); the card lists them all (refusal.problems).
func firstProblem(err error, _ inbox.Verdict) view.Refusal {
	var probs answer.Problems
	if errors.As(err, &probs) && len(probs) > 0 {
		return view.Refusal{Code: probs[0].Code, Message: probs[0].Message}
	}
	return view.Refusal{Code: "invalid", Message: err.Error()}
}

// claimedBy words an answer held back by another operator's claim: it
// names them, and sending again answers (the form carries the claimant
// back).
func claimedBy(_ error, vd inbox.Verdict) view.Refusal {
	return view.ClaimRefusal(vd.Claim)
}

// markRefusal is how the UI answers a refused claim or assignment post:
// its status and words (a plain-text answer: the page's own forms offer
// only what is taken, so only a hand-made or stale post gets one).
type markRefusal struct {
	err    error
	status int
	words  string
}

// markRefusals map every refusal of a claim's or an assignment's post,
// before the inbox takes it, to its status and words: a post the
// operator can fix is 422, one that cannot be taken as they are 409.
var markRefusals = []markRefusal{
	{err: inbox.ErrNoClaimant, status: http.StatusConflict, words: "A claim says who is on a question: sign in with your name to claim one."},
	{err: errNoSuchTeam, status: http.StatusUnprocessableEntity, words: "No team of the routes file is called “%s” here: nothing was assigned. Choose one from the list."},
	{err: errNoSuchAssignee, status: http.StatusUnprocessableEntity, words: "No operator who answers questions is called “%s” here: nothing was assigned. Choose one from the list."},
}

// refuseMark answers a claim's or an assignment's post refused with err
// by its row of markRefusals (the name it refused in place of %s), or
// 500.
func refuseMark(w http.ResponseWriter, err error) {
	for _, row := range markRefusals {
		if errors.Is(err, row.err) {
			msg := row.words
			var n namedRefusal
			if errors.As(err, &n) && strings.Contains(msg, "%s") {
				msg = fmt.Sprintf(msg, n.name)
			}
			http.Error(w, msg, row.status)
			return
		}
	}
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

// namedRefusal is a refusal (err) of a post that named name.
type namedRefusal struct {
	err  error
	name string
}

func (n namedRefusal) Error() string { return n.err.Error() + ": " + strconv.Quote(n.name) }
func (n namedRefusal) Unwrap() error { return n.err }
