package answer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
)

// timers is a controlled clock for the undo window: nothing fires until
// the test says the window passed.
type timers struct {
	mu  sync.Mutex
	due []*timer
	got []time.Duration
}

type timer struct {
	f       func()
	stopped bool
	fired   bool
}

func (ts *timers) after(d time.Duration, f func()) func() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tm := &timer{f: f}
	ts.due = append(ts.due, tm)
	ts.got = append(ts.got, d)
	return func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		was := !tm.stopped && !tm.fired
		tm.stopped = true
		return was
	}
}

// pass runs every timer not stopped: the window passed.
func (ts *timers) pass() {
	ts.mu.Lock()
	var run []func()
	for _, tm := range ts.due {
		if !tm.stopped && !tm.fired {
			tm.fired = true
			run = append(run, tm.f)
		}
	}
	ts.mu.Unlock()
	for _, f := range run {
		f()
	}
}

func undoService(t *testing.T, sub Submitter, window time.Duration) (*Service, *inbox.Inbox, *inbox.MemoryJournal, *timers) {
	t.Helper()
	j := inbox.NewMemoryJournal()
	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return t0 }})
	ts := &timers{}
	svc := New(Config{Inbox: in, Submitter: sub, Now: func() time.Time { return t0 }, UndoWindow: window, AfterFunc: ts.after})
	return svc, in, j, ts
}

// A sent answer is journaled at once and its command held for the undo
// window, the card offering Undo with the time left; Undo then sends
// nothing, journals the answer withdrawn, and the card takes an answer
// again with the operator's choice in its form; the window passing later
// still sends nothing. A new answer after it is sent when its window
// passes, once.
func TestUndoWithinTheWindowSendsNothing(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in, j, ts := undoService(t, holding{k}, 5*time.Second)
	id := ask(t, in, "r1", time.Time{})
	p := allow("tok-1")
	p.Card = id
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))

	cmd := a.Submission.CommandID
	kept, ok, _ := j.Lookup(cmd)
	require.True(t, ok, "journaled at once")
	assert.Equal(t, inbox.SubmissionSending, kept.State)
	sent, dropped := k.all()
	assert.Empty(t, sent, "held for the window")
	assert.Empty(t, dropped)
	assert.Equal(t, []time.Duration{5 * time.Second}, ts.got)
	c, _ := in.Card(id)
	vd := c.Verdict(t0.Add(2*time.Second), inbox.Viewer{})
	assert.True(t, vd.Undo, "the card offers Undo")
	assert.Equal(t, cmd, vd.UndoCommand)
	assert.Equal(t, 3*time.Second, vd.UndoLeft)
	assert.Equal(t, inbox.LineHeld, vd.Line)

	errs := svc.Undo([]Held{{Card: id, Command: cmd}})
	require.Equal(t, []error{nil}, errs)
	kept, _, _ = j.Lookup(cmd)
	assert.Equal(t, inbox.SubmissionWithdrawn, kept.State, "journaled withdrawn")
	c, _ = in.Card(id)
	vd = c.Verdict(t0, inbox.Viewer{})
	assert.False(t, vd.Undo)
	assert.True(t, vd.Answerable, "the card takes an answer again")
	assert.Equal(t, inbox.LineUndone, vd.Line)
	require.NotNil(t, vd.Submission)
	assert.Equal(t, "0", vd.Submission.Form.Get("option"), "the operator's choice is kept for the form")

	ts.pass()
	sent, _ = k.all()
	assert.Empty(t, sent, "taken back: never sent")
	assert.Equal(t, []error{ErrNotHeld}, svc.Undo([]Held{{Card: id, Command: cmd}}), "a second Undo finds nothing held")

	p2 := allow("tok-2")
	p2.Card = id
	a2, err := svc.Begin(context.Background(), p2)
	require.NoError(t, err, "a different answer after Undo")
	require.NoError(t, svc.Send(context.Background(), a2, nil))
	ts.pass()
	sent, _ = k.all()
	require.Len(t, sent, 1)
	assert.Equal(t, a2.Submission.CommandID, sent[0].CommandID)
}

// Once the window passes the command leaves, once, and Undo is refused
// (ErrNotHeld): the card no longer offers it.
func TestAfterTheWindowTheCommandLeavesOnce(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in, _, ts := undoService(t, k, time.Second)
	id := ask(t, in, "r1", time.Time{})
	p := allow("tok-1")
	p.Card = id
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))
	sent, _ := k.all()
	assert.Empty(t, sent)

	ts.pass()
	ts.pass()
	sent, _ = k.all()
	require.Len(t, sent, 1, "sent once")
	assert.Equal(t, a.Submission.CommandID, sent[0].CommandID)
	c, _ := in.Card(id)
	vd := c.Verdict(t0, inbox.Viewer{})
	assert.False(t, vd.Undo, "no Undo once it left")
	assert.Equal(t, inbox.LineSending, vd.Line)
	errs := svc.Undo([]Held{{Card: id, Command: a.Submission.CommandID}})
	assert.ErrorIs(t, errs[0], ErrNotHeld)
}

// A batch's answers wait the same window, and one Undo of them all
// takes back the batch.
func TestBatchUndoTakesBackTheBatch(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in, _, ts := undoService(t, k, 5*time.Second)
	ids := []inbox.CardID{ask(t, in, "r1", time.Time{}), ask(t, in, "r2", time.Time{})}
	c, _ := in.Card(ids[0])
	items, err := svc.BeginBatch(context.Background(), Batch{Cards: ids, Shape: c.Shape.ID(), Token: "b1",
		Form: map[string][]string{"option": {"1"}}, By: "alice"})
	require.NoError(t, err)
	var held []Held
	for _, it := range items {
		require.NoError(t, it.Err)
		require.NoError(t, svc.Send(context.Background(), it.Answer, nil))
		held = append(held, Held{Card: it.ID, Command: it.Submission.CommandID})
	}
	assert.Equal(t, []error{nil, nil}, svc.Undo(held))
	ts.pass()
	sent, _ := k.all()
	assert.Empty(t, sent, "the batch taken back")
}

// A rule's answers (a Service with no window) never wait.
func TestNoWindowSendsAtOnce(t *testing.T) {
	t.Parallel()
	k := &kept{}
	svc, in, _, ts := undoService(t, k, 0)
	id := ask(t, in, "r1", time.Time{})
	p := allow("tok-1")
	p.Card = id
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))
	sent, _ := k.all()
	assert.Len(t, sent, 1)
	assert.Empty(t, ts.got, "no timer")
}

// A window that passes while the UI stops sends nothing and settles
// nothing: the answer stays journaled as sending, for the next serve.
func TestStoppingLeavesTheHeldAnswerJournaled(t *testing.T) {
	t.Parallel()
	k := &kept{}
	j := inbox.NewMemoryJournal()
	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return t0 }})
	ts := &timers{}
	svc := New(Config{Inbox: in, Submitter: k, Now: func() time.Time { return t0 }, UndoWindow: time.Second,
		AfterFunc: ts.after, Stopping: func() bool { return true }})
	id := ask(t, in, "r1", time.Time{})
	p := allow("tok-1")
	p.Card = id
	a, err := svc.Begin(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))
	ts.pass()
	sent, _ := k.all()
	assert.Empty(t, sent, "not sent by a stopping UI")
	require.NoError(t, in.Flush(context.Background()))
	kept, _, _ := j.Lookup(a.Submission.CommandID)
	assert.Equal(t, inbox.SubmissionSending, kept.State, "left journaled as sending")
}
