package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/respond"
	"github.com/aepforms/aepforms/internal/store"
)

// Resuming the journal's answers after a restart (inbox/restore.go has
// the rules).
//
// Before the feed starts, the inbox restores the journal's answers still
// waiting for the agent, so each card comes back locked with its answer.
// Then the feed replays the relay's history from=all. The stream has no
// "end of history" mark, so the feed counts as caught up once it has been
// connected and quiet (no event) for catchUpQuiet, or connected for
// catchUpMost whatever it delivers (a busy relay is never quiet): by then
// the history the relay sent at once has been read. Then the inbox
// decides, and what it hands back is sent again with its original
// command id and bytes. An answer whose question the relay did not bring
// by then is not given up: a relay may know nothing yet (one started
// with serve knows no session until the agents come back and ask their
// open questions again), so it waits for its card (inbox.Late) until
// --resend-max-age has passed.

const (
	// catchUpQuiet is how long the feed must deliver nothing, after it
	// connected, to count as caught up with the relay's history.
	catchUpQuiet = time.Second
	// catchUpMost is the longest the resume waits, once connected, for a
	// quiet moment.
	catchUpMost = 10 * time.Second
	// catchUpTick is how often the resume looks.
	catchUpTick = 100 * time.Millisecond
)

// catchUp is the feed's sink: the inbox, watched for when the feed
// connected and last delivered an event.
type catchUp struct {
	*inbox.Inbox
	now func() time.Time
	// onConnect, when set, is called each time the feed's stream opens
	// (the relay is reachable again): graph.go wakes the respond path.
	onConnect func()

	mu        sync.Mutex
	connected bool
	since     time.Time // when the current stream opened
	last      time.Time // the last event, or since
}

func newCatchUp(in *inbox.Inbox, now func() time.Time) *catchUp {
	if now == nil {
		now = time.Now
	}
	return &catchUp{Inbox: in, now: now}
}

// Apply notes the event's arrival and hands it to the inbox.
func (c *catchUp) Apply(e *aep.Event) {
	c.mu.Lock()
	c.last = c.now()
	c.mu.Unlock()
	c.Inbox.Apply(e)
}

// FeedState notes when the stream opened and hands the state on.
func (c *catchUp) FeedState(connected bool, err error) {
	c.mu.Lock()
	if connected && !c.connected {
		c.since = c.now()
		c.last = c.since
	}
	opened := connected && !c.connected
	c.connected = connected
	c.mu.Unlock()
	c.Inbox.FeedState(connected, err)
	if opened && c.onConnect != nil {
		c.onConnect()
	}
}

// caughtUp reports whether the feed is connected and has been quiet for
// quiet, or connected for most.
func (c *catchUp) caughtUp(quiet, most time.Duration) bool {
	return c.quietAfter(time.Time{}, quiet, most)
}

// quietAfter reports whether the feed is connected and has been quiet for
// quiet, or connected for most since the later of from and its stream's
// opening.
func (c *catchUp) quietAfter(from time.Time, quiet, most time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	start := c.since
	if from.After(start) {
		start = from
	}
	return c.connected && (now.Sub(c.last) >= quiet || now.Sub(start) >= most)
}

// resume waits for the feed to catch up, then sends again what the inbox
// hands back from the journal. It returns at once when there is nothing
// to resume, and when ctx ends.
func resume(ctx context.Context, in *inbox.Inbox, feed *catchUp, rc *respond.Client, maxAge time.Duration, logger *slog.Logger) error {
	if loaded, _ := in.Restoring(); loaded == 0 {
		return nil
	}
	if !waitCaughtUp(ctx, feed) {
		return nil
	}
	again := in.Resume(maxAge)
	logger.Info("answer journal: resuming after a restart", "sending_again", len(again), "resend_max_age", maxAge)
	sendAgain(ctx, in, rc, again, "not sent again after the restart", logger)
	return nil
}

// waitCaughtUp waits for the feed to catch up with the relay's history;
// false when ctx ended first.
func waitCaughtUp(ctx context.Context, feed *catchUp) bool {
	return waitQuiet(ctx, feed, time.Time{})
}

// waitQuiet waits until the feed is connected and quiet for catchUpQuiet,
// or for catchUpMost since from (the zero time: since it connected);
// false when ctx ended first.
func waitQuiet(ctx context.Context, feed *catchUp, from time.Time) bool {
	t := time.NewTicker(catchUpTick)
	defer t.Stop()
	for !feed.quietAfter(from, catchUpQuiet, catchUpMost) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// sendAgain queues answers handed back by the journal with their
// original command ids and bytes.
func sendAgain(ctx context.Context, in *inbox.Inbox, rc *respond.Client, again []inbox.Submission, failed string, logger *slog.Logger) {
	for _, s := range again {
		if err := rc.Submit(context.WithoutCancel(ctx), s); err != nil {
			logger.Warn("answer journal: an answer to send again was not queued", "card", string(s.Card), "command", s.CommandID, "err", err)
			in.SettleSubmission(s.Card, s.CommandID, inbox.SubmissionFailed, inbox.ReasonUnreachable, failed)
		}
	}
}

// reclaim keeps this replica's resend leases and takes over those another
// replica let lapse (it died between journaling an answer and the
// agent's ack), every third of the lease, once the feed has caught up
// (the cards must be there to judge the answers) and after resume
// (which claims this replica's own first, so nothing is sent twice from
// here). On a journal only this process opens, other replicas' leases
// are those of earlier processes under another name. Between, it sends
// again the answers restored after the restart whose card came only
// after resume (inbox.Late), once the events that follow have been read.
// Each time it also marks the cards of the answers other replicas queued
// (inbox.SeePeers), which no feed shows.
func reclaim(ctx context.Context, in *inbox.Inbox, feed *catchUp, rc *respond.Client, maxAge, lease time.Duration, logger *slog.Logger) error {
	if lease <= 0 {
		lease = store.DefaultLease
	}
	if !waitCaughtUp(ctx, feed) {
		return nil
	}
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		if again := in.Reclaim(maxAge); len(again) > 0 {
			logger.Info("answer journal: taking over answers whose replica stopped renewing them", "sending_again", len(again))
			sendAgain(ctx, in, rc, again, "not sent again after its replica stopped", logger)
		}
		in.SeePeers() // what the others queued, not on the feed yet
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-in.Late():
			if !waitQuiet(ctx, feed, time.Now()) {
				return nil
			}
			if again := in.ResumeLate(); len(again) > 0 {
				logger.Info("answer journal: sending again answers from before the restart whose question is back", "sending_again", len(again))
				sendAgain(ctx, in, rc, again, "not sent again after the restart", logger)
			}
		}
	}
}

// renewUntilCaughtUp keeps this replica's resend leases from the start
// until the feed has caught up, when reclaim takes over: resume and
// reclaim wait for the catch-up, and the answers posted meanwhile (queued
// while the relay is away, for as long as it is) must stay this
// replica's, not lapse to another's. Meanwhile it marks the cards of the
// answers other replicas queued (inbox.SeePeers), as reclaim does after.
func renewUntilCaughtUp(ctx context.Context, in *inbox.Inbox, feed *catchUp, lease time.Duration) {
	if lease <= 0 {
		lease = store.DefaultLease
	}
	caught := make(chan struct{})
	go func() { waitCaughtUp(ctx, feed); close(caught) }()
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		in.RenewLeases()
		in.SeePeers() // the cards it holds already say what the others queued
		select {
		case <-caught:
			return
		case <-t.C:
		}
	}
}

// liveReporter hands the respond path's outcomes to the inbox while the
// UI runs. When serve stops, the respond path reports every command still
// in flight as failed ("stopped"); that is no outcome of the agent's, so
// it is dropped, and the answer stays journaled as sending, to be resumed
// by the next serve on the same journal.
type liveReporter struct {
	in  *inbox.Inbox
	ctx context.Context // serve's; set by start before the respond path runs
}

// SettleSubmission passes the outcome on unless serve is stopping.
func (r *liveReporter) SettleSubmission(id inbox.CardID, commandID string, state inbox.SubmissionState, reason, detail string) {
	if r.ctx != nil && r.ctx.Err() != nil {
		return
	}
	r.in.SettleSubmission(id, commandID, state, reason, detail)
}

// stopping reports whether serve is stopping (its context ended).
func (r *liveReporter) stopping() bool { return r.ctx != nil && r.ctx.Err() != nil }
