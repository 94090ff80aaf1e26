package inbox

// Sweep re-checks every card with an expires_at against the inbox clock:
// an open card past its deadline becomes expired (and one whose deadline
// is ahead again, with a clock set back, reopens); every card locked
// by another sender's command waiting for its ack (past the ack window
// the lock ends); every queued answer against Options.QueueMaxAge; every
// answer restored after a restart still waiting for its card against the
// resend limit (restore.go); and it
// turns the page's "connecting" into "relay lost" once
// Options.ConnectGrace has passed. The app calls it on a ticker; tests
// call it after moving their clock.
func (in *Inbox) Sweep() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, en := range in.byID {
		if !en.card.ExpiresAt.IsZero() || en.waitingAck() || (en.card.Submission != nil && en.card.Submission.State == SubmissionQueued) {
			in.touch(en, false)
		}
	}
	in.sweepClaims(in.opts.Now())
	in.sweepRestored(in.opts.Now())
	in.commit()
	in.sweepGrace(in.opts.Now())
}
