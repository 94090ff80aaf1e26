package app

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/respond"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// An answer held for Undo whose window ends while serve stops (the
// respond path already closed) is not lost: it stays journaled as
// sending, so the next start sends it, as after a crash. Settled failed,
// it was never sent and no restart sent it.
func TestAHeldAnswerWhoseWindowEndsInTheStopIsSentAfterTheRestart(t *testing.T) {
	t.Parallel()
	j, err := sqlite.Open(filepath.Join(t.TempDir(), "state", "journal.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	now := time.Date(2026, 7, 3, 10, 0, 0, 0, time.UTC)
	in := inbox.New(inbox.Options{Journal: j, Now: func() time.Time { return now }})

	// The respond path, stopped as serve's stop stops it.
	client := respond.New(respond.Config{RelayURL: "http://127.0.0.1:1", Token: "t", Agent: "aepforms",
		Source: "aep://h/ui/aepforms", Reporter: in, Release: in})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- client.Run(ctx) }()

	var mu sync.Mutex
	var window []func()
	svc := answer.New(answer.Config{Inbox: in, Submitter: untilStop{client}, Now: func() time.Time { return now },
		UndoWindow: 5 * time.Second, AfterFunc: func(_ time.Duration, f func()) func() bool {
			mu.Lock()
			defer mu.Unlock()
			window = append(window, f)
			return func() bool { return false }
		}})

	e, err := aep.Build(aep.Envelope{ID: "r1", Type: "attention.requested", Source: "aep://h/agent/builder", Agent: "builder",
		Session: "s1", Capture: "full", Seq: aep.Int64(1), Time: now.Format(time.RFC3339),
		Data: map[string]any{"kind": "permission", "prompt": "Run npm test?",
			"options": []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}}})
	require.NoError(t, err)
	in.Apply(e)
	id := inbox.RequestKey{Source: "aep://h/agent/builder", Session: "s1", RequestID: "r1"}.CardID()
	a, err := svc.Begin(context.Background(), answer.Post{Card: id, Token: "tok-1",
		Form: url.Values{"token": {"tok-1"}, "option": {"0"}}, By: "alice"})
	require.NoError(t, err)
	require.NoError(t, svc.Send(context.Background(), a, nil))

	cancel() // serve stops: the respond path closes
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("the respond path did not stop within a minute")
	}
	mu.Lock()
	require.Len(t, window, 1, "the answer is held for its window")
	letGo := window[0]
	mu.Unlock()
	letGo() // the window ends during the stop

	fctx, fcancel := context.WithTimeout(context.Background(), time.Minute)
	defer fcancel()
	require.NoError(t, in.Flush(fctx))
	unsettled, err := j.Unsettled()
	require.NoError(t, err)
	require.Len(t, unsettled, 1, "the answer is still to be sent: the next start sends it")
	assert.Equal(t, a.Submission.CommandID, unsettled[0].CommandID)
	assert.Equal(t, inbox.SubmissionSending, unsettled[0].State)
}
