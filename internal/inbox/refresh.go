package inbox

// Refresh republishes every open card as updated, for a change the inbox
// cannot see but its views show (the relay roster: whether an agent is
// connected for answers), so pushed views re-render them.
func (in *Inbox) Refresh() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, en := range in.byID {
		if en.card.State.Open() {
			in.touch(en, true)
		}
	}
	in.commit()
}
