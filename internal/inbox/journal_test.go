package inbox

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingJournal refuses every Record.
type failingJournal struct{ *MemoryJournal }

func (failingJournal) Record(Submission) error { return errors.New("disk full") }

// A submission is journaled before BeginSubmission returns (so before its
// command is sent), and every state it moves to follows it there.
func TestSubmissionsAreJournaledAheadOfSending(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	clk := newClock()
	in := New(Options{Now: clk.Now, Journal: j})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	s, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	assert.Equal(t, id, s.Card)
	assert.Equal(t, RequestKey{Source: testSource, Session: testSession, RequestID: "r1"}, s.Key, "the card's request fills the submission")
	require.Len(t, s.Fields, 1)
	c, _ := in.Card(id)
	assert.Equal(t, c.Agent, s.Agent, "the request's agent travels with the submission")
	assert.Equal(t, c.Request.Prompt, s.Question, "and so does its question")

	waiting, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "journaled before anything is sent")
	assert.Equal(t, "c1", waiting[0].CommandID)
	assert.Equal(t, SubmissionSending, waiting[0].State)
	assert.Equal(t, s.Question, waiting[0].Question)

	in.SettleSubmission(id, "c1", SubmissionAccepted, "", "")
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1, "accepted still waits for the agent's record")
	assert.Equal(t, SubmissionAccepted, waiting[0].State)

	clk.Add(time.Second)
	in.Apply(lifecycle(t, "control.rejected", "n1", "r1", "c1", 1, map[string]any{"reason": "invalid"}))
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, waiting, 1, "the agent's acceptance stands: a later nack changes nothing")
}

// A journal that cannot keep the submission refuses the post: nothing is
// sent and the card stays answerable.
func TestAnUnjournaledSubmissionIsRefused(t *testing.T) {
	t.Parallel()
	in := New(Options{Journal: failingJournal{NewMemoryJournal()}})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.ErrorIs(t, err, ErrNotRecorded)
	c, ok := in.Card(id)
	require.True(t, ok)
	assert.Nil(t, c.Submission, "no submission without its journal entry")
	assert.NoError(t, c.CanAnswer(time.Now()), "the card still takes an answer")
}

// With a command builder, the command's exact bytes are made before the
// submission is journaled and are journaled with it; a builder that
// refuses the submission refuses the post, with nothing journaled.
func TestJournalKeepsTheCommandBytes(t *testing.T) {
	t.Parallel()
	j := NewMemoryJournal()
	var built []Submission
	in := New(Options{Journal: j, Command: func(s Submission) ([]byte, error) {
		if s.Token == "bad" {
			return nil, errors.New("no")
		}
		built = append(built, s)
		return []byte("bytes of " + s.CommandID), nil
	}})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	_, err := in.BeginSubmission(id, sub("bad", "c0"))
	require.ErrorIs(t, err, ErrInvalidSubmission)
	waiting, _ := j.Unsettled()
	assert.Empty(t, waiting, "a refused build journals nothing")

	s, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err)
	assert.Equal(t, "bytes of c1", string(s.Command))
	require.Len(t, built, 1)
	assert.Equal(t, RequestKey{Source: testSource, Session: testSession, RequestID: "r1"}, built[0].Key, "built from the whole submission")
	waiting, err = j.Unsettled()
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	assert.Equal(t, "bytes of c1", string(waiting[0].Command), "journaled with its bytes")
}

// slowJournal holds every Record until the test releases it, telling the
// test when one has started: a disk sync made as long as the test likes.
type slowJournal struct {
	*MemoryJournal
	started chan string   // the command id of each Record begun
	release chan struct{} // one receive lets one Record finish
	fail    error         // what the held Records return
}

func newSlowJournal() *slowJournal {
	return &slowJournal{MemoryJournal: NewMemoryJournal(), started: make(chan string, 8), release: make(chan struct{})}
}

func (j *slowJournal) Record(s Submission) error {
	j.started <- s.CommandID
	<-j.release
	if j.fail != nil {
		return j.fail
	}
	return j.MemoryJournal.Record(s)
}

// within runs f and fails the test if it has not returned within a
// generous bound: the inbox is held up by a journal write in progress.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s waited for a journal write in progress", what)
	}
}

// beginAsync starts BeginSubmission in a goroutine and returns its result
// channel, once the journal has started the write.
func beginAsync(t *testing.T, in *Inbox, j *slowJournal, id CardID, s Submission) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		_, err := in.BeginSubmission(id, s)
		res <- err
	}()
	select {
	case got := <-j.started:
		require.Equal(t, s.CommandID, got)
	case <-time.After(5 * time.Second):
		t.Fatal("BeginSubmission never wrote to the journal")
	}
	return res
}

// While one answer is being journaled, the inbox goes on: the feed's
// events apply, pages read, another card takes its answer; the card
// being journaled refuses a second answer (ErrInFlight) and counts its
// own form posted again as a duplicate. Its answer is on the card once
// the journal has it, and not before.
func TestAJournalWriteHoldsUpNothingElse(t *testing.T) {
	t.Parallel()
	j := newSlowJournal()
	in := New(Options{Journal: j})
	in.Apply(request(t, "r1", 0, formData("")))
	in.Apply(request(t, "r2", 1, formData("")))
	r1, r2 := cardIDOf("r1"), cardIDOf("r2")

	first := beginAsync(t, in, j, r1, sub("t1", "c1"))
	within(t, "an event", func() { in.Apply(request(t, "r3", 2, formData(""))) })
	within(t, "a page read", func() {
		assert.Len(t, in.Cards(Query{}), 3)
		c, _ := in.Card(r1)
		assert.Nil(t, c.Submission, "not on the card before the journal has it")
	})
	within(t, "a second answer to the card", func() {
		_, err := in.BeginSubmission(r1, sub("t2", "c2"))
		assert.ErrorIs(t, err, ErrInFlight)
	})
	// The same form again (a double click) waits for the first post's
	// fate: it is told the answer was taken only once it is kept.
	again := make(chan Submission, 1)
	go func() {
		s, err := in.BeginSubmission(r1, sub("t1", "c3"))
		assert.ErrorIs(t, err, ErrDuplicate)
		again <- s
	}()
	second := beginAsync(t, in, j, r2, sub("t4", "c4"))

	j.release <- struct{}{}
	j.release <- struct{}{}
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	select {
	case s := <-again:
		assert.Equal(t, "c1", s.CommandID, "the answer journaled")
	case <-time.After(5 * time.Second):
		t.Fatal("the same form posted again never got its answer")
	}
	c, _ := in.Card(r1)
	require.NotNil(t, c.Submission)
	assert.Equal(t, "c1", c.Submission.CommandID)
	assert.Equal(t, SubmissionSending, c.Submission.State)
	waiting, err := j.Unsettled()
	require.NoError(t, err)
	assert.Len(t, waiting, 2, "both answers journaled, no other")
}

// A journal write that fails releases the card: the post is refused
// (ErrNotRecorded) and the next post, a new form, is taken.
func TestAFailedJournalWriteReleasesTheCard(t *testing.T) {
	t.Parallel()
	j := newSlowJournal()
	j.fail = errors.New("disk full")
	in := New(Options{Journal: j})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	res := beginAsync(t, in, j, id, sub("t1", "c1"))
	j.release <- struct{}{}
	require.ErrorIs(t, <-res, ErrNotRecorded)
	c, _ := in.Card(id)
	assert.Nil(t, c.Submission)
	assert.NoError(t, c.CanAnswer(time.Now()))

	j.fail = nil
	res = beginAsync(t, in, j, id, sub("t2", "c2"))
	j.release <- struct{}{}
	require.NoError(t, <-res)
}

// The same form posted twice while its first post is being journaled (a
// double click), and the journal refuses the first: the second is not
// told "sent" for an answer never kept; it is journaled itself.
func TestASecondPostOfAFormWhoseFirstWasNotKeptIsKept(t *testing.T) {
	t.Parallel()
	j := newSlowJournal()
	j.fail = errors.New("disk full")
	in := New(Options{Journal: j})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	first := beginAsync(t, in, j, id, sub("t1", "c1"))
	again := make(chan error, 1)
	go func() {
		_, err := in.BeginSubmission(id, sub("t1", "c2"))
		again <- err
	}()
	j.release <- struct{}{} // the first post's write fails
	require.ErrorIs(t, <-first, ErrNotRecorded)
	j.fail = nil
	select {
	case got := <-j.started:
		assert.Equal(t, "c2", got, "the second post is journaled in its own right")
	case <-time.After(5 * time.Second):
		t.Fatal("the second post never reached the journal")
	}
	j.release <- struct{}{}
	require.NoError(t, <-again)
	c, _ := in.Card(id)
	require.NotNil(t, c.Submission)
	assert.Equal(t, "c2", c.Submission.CommandID)
}

// A card whose answer is being journaled is never evicted to make room:
// its answer is about to be sent.
func TestACardBeingJournaledIsNotEvicted(t *testing.T) {
	t.Parallel()
	j := newSlowJournal()
	in := New(Options{Journal: j, MaxPending: 1})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	res := beginAsync(t, in, j, id, sub("t1", "c1"))
	within(t, "an event", func() { in.Apply(request(t, "r2", 1, formData(""))) })
	_, kept := in.Card(id)
	assert.True(t, kept, "the card being journaled stays")
	j.release <- struct{}{}
	require.NoError(t, <-res)
	c, ok := in.Card(id)
	require.True(t, ok)
	require.NotNil(t, c.Submission)
	assert.Equal(t, "c1", c.Submission.CommandID)
}

// orderJournal notes each Record in a shared log.
type orderJournal struct {
	*MemoryJournal
	log *[]string
}

func (j orderJournal) Record(s Submission) error {
	*j.log = append(*j.log, "record "+s.CommandID)
	return j.MemoryJournal.Record(s)
}

// BeginSubmissionWhile calls while once the card is reserved (another
// form's post is refused as in flight) and before the journal write, so
// what the caller does then overlaps the disk's sync; a refused post
// calls nothing.
func TestBeginSubmissionWhileRunsDuringTheJournalWrite(t *testing.T) {
	t.Parallel()
	var log []string
	in := New(Options{Journal: orderJournal{NewMemoryJournal(), &log}})
	in.Apply(request(t, "r1", 0, formData("")))
	id := cardIDOf("r1")

	_, err := in.BeginSubmissionWhile(id, sub("t1", "c1"), func(s Submission) {
		log = append(log, "while "+s.CommandID)
		_, err := in.BeginSubmission(id, sub("t2", "c2"))
		assert.ErrorIs(t, err, ErrInFlight, "the card is reserved while the caller works")
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"while c1", "record c1"}, log)

	_, err = in.BeginSubmissionWhile(id, sub("t3", "c3"), func(Submission) { log = append(log, "refused while") })
	require.ErrorIs(t, err, ErrInFlight)
	_, err = in.BeginSubmissionWhile("no-such-card", sub("t4", "c4"), func(Submission) { log = append(log, "gone while") })
	require.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, []string{"while c1", "record c1"}, log, "a refused post calls nothing")
}

// WaitingHeads are Heads' open cards only (the next card after a post is
// chosen among them): a settled card is not copied.
func TestWaitingHeadsAreTheOpenHeads(t *testing.T) {
	t.Parallel()
	in := New(Options{})
	in.Apply(request(t, "r1", 0, formData("")))
	in.Apply(request(t, "r2", 1, formData("")))
	in.Apply(request(t, "r3", 2, formData("")))
	in.Apply(lifecycle(t, "attention.resolved", "z2", "r2", "", 3, map[string]any{"resolution": "answered"}))

	var open []CardID
	for _, h := range in.Heads(Query{}) {
		if h.State.Open() {
			open = append(open, h.ID)
		}
	}
	require.Len(t, open, 2, "r2 settled")
	var waiting []CardID
	for _, h := range in.WaitingHeads(Query{}) {
		waiting = append(waiting, h.ID)
		assert.Nil(t, h.Request.Fields, "a head, without its request's body")
	}
	assert.ElementsMatch(t, open, waiting)
	assert.Empty(t, in.WaitingHeads(Query{Session: "no such session"}), "the query applies")
}
