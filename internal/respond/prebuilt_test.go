package respond

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// A submission carrying its command's bytes (Build, then journaled) is
// sent as those bytes, unchanged, even when the client's clock has moved
// on since they were built (a resend after a restart).
func TestJournalSubmitSendsBuiltBytes(t *testing.T) {
	t.Parallel()
	fr := newFakeRelay(t)
	fr.onCommand = func(fc *fakeConn, cmd *aep.Event, _ int) { fc.accept(cmd) }
	cfg := testConfig(fr.url())
	var later atomic.Bool
	cfg.Now = func() time.Time {
		if later.Load() {
			return testNow.Add(time.Hour)
		}
		return testNow
	}
	c, rep := start(t, cfg)

	s := submission("s1", "card-1")
	s.CommandID = "01J0000000000000000000CMD1"
	raw, err := c.Build(s)
	require.NoError(t, err)
	later.Store(true)
	s.Command = raw
	require.NoError(t, c.Submit(t.Context(), s))
	o := rep.next(t)
	assert.Equal(t, inbox.SubmissionAccepted, o.State, "outcome: %+v", o)
	sent := raws(fr.frames(typeRespond))
	require.Len(t, sent, 1)
	assert.Equal(t, string(raw), sent[0], "the bytes sent: got, want the built ones")
}

func TestJournalBuildNeedsCommandID(t *testing.T) {
	t.Parallel()
	c := New(testConfig("http://127.0.0.1:1"))
	_, err := c.Build(submission("s1", "card-1"))
	require.ErrorIs(t, err, ErrInvalid)
	s := submission("", "card-1")
	s.CommandID, s.Command = "X", []byte(`{}`)
	require.ErrorIs(t, c.Submit(t.Context(), s), ErrInvalid, "built bytes without a session")
}
