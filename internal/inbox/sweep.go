package inbox

// Sweep re-checks every card with an expires_at against the inbox clock:
// an open card past its deadline becomes expired (and one whose deadline
// is ahead again, with a clock set back, reopens); and every card locked
// by another sender's command waiting for its ack: past the ack window
// the lock ends. The app calls it on a ticker; tests call it after moving
// their clock.
func (in *Inbox) Sweep() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, en := range in.byID {
		if !en.card.ExpiresAt.IsZero() || en.waitingAck() {
			in.touch(en, false)
		}
	}
	in.commit()
}
