package app

import (
	"github.com/aepforms/aepforms/internal/feed"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/respond"
)

// One answer through the system, and the one adapter it needs.
//
// Out: the relay's SSE stream -> feed.Client (dedupe on (source, id),
// resume by position) -> inbox.Inbox.Apply makes a Card -> web pushes its
// fragment (render.Fragments, rendered once per version) to every open
// page. The operator posts the form -> web.handleAnswer: form.ParseAnswer
// turns the post into answer.values, inbox.Inbox.BeginSubmission decides
// (Card.CanAnswer) and journals one Submission -> respond.Client.Submit
// sends it as one control.attention.respond on the relay's WebSocket.
//
// Back: the target's control.accepted or control.rejected reaches the UI
// twice, on purpose. The respond path waits for it on its socket (it is
// the reply to its own command, with a window and retries), and reports it
// with inbox.Inbox.SettleSubmission. The same ack is also an event on the
// relay's feed, which inbox.Inbox.Apply matches to the command by its
// cause: that copy is what settles a card when the socket dropped before
// the ack came, and what tells another UI instance that someone answered.
// The agent's attention.answered on the feed then settles the card for
// good. Each path is idempotent, so whichever arrives first wins.
//
// The parts fit each other directly (graph.go asserts it), except /readyz
// and /metrics, which read three parts at once through upstream.

// upstream is the relay connections as web reports them: the feed's state
// from the inbox (which the feed tells), its reconnects from the feed, and
// the respond path's connection and command outcomes.
type upstream struct {
	in      *inbox.Inbox
	feed    *feed.Client
	respond *respond.Client // nil when watch-only
}

func (u upstream) FeedConnected() bool   { return u.in.Status().FeedConnected }
func (u upstream) FeedReconnects() int64 { return u.feed.Reconnects() }

// RespondConnected is true without a respond path: nothing to wait for.
func (u upstream) RespondConnected() bool { return u.respond == nil || u.respond.Connected() }

func (u upstream) Outcomes() map[inbox.SubmissionState]int64 {
	if u.respond == nil {
		return nil
	}
	return u.respond.Outcomes()
}
