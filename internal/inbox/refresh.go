package inbox

// OpenSessions lists, once each, the sessions that have an open card.
func (in *Inbox) OpenSessions() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	seen := make(map[string]bool)
	var out []string
	for _, en := range in.byID {
		if s := en.card.Key.Session; en.card.State.Open() && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RefreshSessions republishes the open cards of the named sessions as
// updated, for a change the inbox cannot see but its views show (the
// relay roster: whether a session's agent is connected for answers), so
// pushed views re-render just those cards.
func (in *Inbox) RefreshSessions(sessions ...string) {
	if len(sessions) == 0 {
		return
	}
	want := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		want[s] = true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, en := range in.byID {
		if en.card.State.Open() && want[en.card.Key.Session] {
			in.touch(en, true)
		}
	}
	in.commit()
}
