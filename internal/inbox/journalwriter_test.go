package inbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// blockingJournal is a journal on a database that has stopped answering:
// Settle, KeepRecorded and Lookup wait until release is closed (Record
// answers, so a post can be journaled before the stall). It logs the
// writes in the order they were made.
type blockingJournal struct {
	*MemoryJournal
	release chan struct{}
	entered chan string // each blocked call's name, as it starts waiting

	mu     sync.Mutex
	writes []string
}

func newBlockingJournal() *blockingJournal {
	return &blockingJournal{MemoryJournal: NewMemoryJournal(), release: make(chan struct{}), entered: make(chan string, 64)}
}

func (j *blockingJournal) block(call string) {
	j.entered <- call
	<-j.release
}

func (j *blockingJournal) Settle(id string, state SubmissionState, reason, detail string, at time.Time) error {
	j.block("Settle")
	j.mu.Lock()
	j.writes = append(j.writes, fmt.Sprintf("settle %s %s", id, state))
	j.mu.Unlock()
	return j.MemoryJournal.Settle(id, state, reason, detail, at)
}

func (j *blockingJournal) KeepRecorded(id string, r Recorded, at time.Time) error {
	j.block("KeepRecorded")
	j.mu.Lock()
	j.writes = append(j.writes, "recorded "+id)
	j.mu.Unlock()
	return j.MemoryJournal.KeepRecorded(id, r, at)
}

func (j *blockingJournal) Lookup(id string) (Submission, bool, error) {
	j.block("Lookup")
	return j.MemoryJournal.Lookup(id)
}

func (j *blockingJournal) log() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.writes...)
}

// returnsWhileStalled runs f and fails the test unless it returns within a deadline.
func returnsWhileStalled(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return while the journal was stalled", what)
	}
}

// No journal call runs under the inbox lock: with the journal stalled,
// the feed keeps applying events (the settles and the agent's record of
// the answer are queued) and the page keeps reading cards, even while a
// lookup is waiting on the journal; released, the journal receives the
// card's states in the order they happened.
func TestAStalledJournalHoldsUpNeitherTheFeedNorThePage(t *testing.T) {
	t.Parallel()
	j := newBlockingJournal()
	const ui = "aep://host/ui/aepforms"
	in := New(Options{Journal: j, OwnSources: []string{ui}})
	t.Cleanup(func() {
		select {
		case <-j.release:
		default:
			close(j.release)
		}
		require.NoError(t, in.Flush(context.Background()))
	})
	in.Apply(request(t, "r1", 0, formData("")))
	in.Apply(request(t, "r2", 1, formData("")))
	id := cardIDOf("r1")
	_, err := in.BeginSubmission(id, sub("t1", "c1"))
	require.NoError(t, err, "Record answers: the post is journaled")

	// The relay's ack and the agent's record of the answer: each settles
	// the submission in the journal, which does not answer.
	returnsWhileStalled(t, "the feed's ack", func() {
		in.Apply(lifecycle(t, "control.accepted", "k1", "r1", "c1", 2, map[string]any{}))
	})
	assert.Equal(t, "Settle", <-j.entered, "the writer is waiting on the journal")
	returnsWhileStalled(t, "the feed's answered event", func() {
		in.Apply(lifecycle(t, "attention.answered", "a1", "r1", "c1", 3, map[string]any{"answer": map[string]any{"values": map[string]any{"name": "x"}}}))
	})
	returnsWhileStalled(t, "the page", func() {
		c, ok := in.Card(id)
		require.True(t, ok)
		require.NotNil(t, c.Submission)
		assert.Equal(t, SubmissionAccepted, c.Submission.State, "the page shows the state the journal has not kept yet")
		assert.Len(t, in.Heads(Query{}), 2)
	})

	// A command of this UI's source the inbox does not know (sent before
	// a restart) is looked up before the lock: while that lookup waits,
	// the page still reads.
	cmd := ev(t, aep.Envelope{ID: "old-cmd", Type: "control.attention.respond", Subject: "r2", Source: ui, Agent: "aepforms",
		Session: testSession, Capture: "full", Data: map[string]any{"answer": map[string]any{"values": map[string]any{"name": "y"}}}})
	looking := make(chan struct{})
	go func() {
		defer close(looking)
		in.Apply(cmd)
	}()
	assert.Equal(t, "Lookup", <-j.entered)
	returnsWhileStalled(t, "the page during a lookup", func() { assert.Len(t, in.Heads(Query{}), 2) })

	close(j.release)
	<-looking
	require.NoError(t, in.Flush(context.Background()))
	assert.Equal(t, []string{"settle c1 accepted", "recorded c1"}, j.log(), "the journal keeps the states in the order they happened")
	kept, ok, err := j.MemoryJournal.Lookup("c1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, SubmissionAccepted, kept.State)
	assert.NotNil(t, kept.Recorded)
	c, _ := in.Card(cardIDOf("r2"))
	require.Len(t, c.Responders, 1, "the unknown command of this UI's source locks its card")
	assert.True(t, c.Responders[0].Own)
}

// A journal that falls Options.JournalQueue writes behind is noted; the
// cards still show every change.
func TestAJournalFarBehindIsNoted(t *testing.T) {
	t.Parallel()
	j := newBlockingJournal()
	in := New(Options{Journal: j, JournalQueue: 1})
	t.Cleanup(func() {
		close(j.release)
		require.NoError(t, in.Flush(context.Background()))
	})
	for i := range 3 {
		in.Apply(request(t, fmt.Sprintf("r%d", i), int64(i), formData("")))
		_, err := in.BeginSubmission(cardIDOf(fmt.Sprintf("r%d", i)), sub(fmt.Sprintf("t%d", i), fmt.Sprintf("c%d", i)))
		require.NoError(t, err)
		in.SettleSubmission(cardIDOf(fmt.Sprintf("r%d", i)), fmt.Sprintf("c%d", i), SubmissionAccepted, "", "")
		if i == 0 {
			<-j.entered // the first write is taken and waits; the queue is empty again
		}
	}
	notices := in.Status().Notices
	require.NotEmpty(t, notices)
	assert.Contains(t, notices[len(notices)-1].Message, "not keeping up")
	c, _ := in.Card(cardIDOf("r2"))
	assert.Equal(t, SubmissionAccepted, c.Submission.State)
}
