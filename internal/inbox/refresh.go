package inbox

// RefreshReach re-reads the reach of every session with an open card and
// republishes (as updated) the open cards of the sessions whose reach
// changed since the last call, so pushed views re-render just those cards
// when an agent connects or leaves: a change the inbox cannot see in its
// events but its views show. reach is called without the inbox's lock.
func (in *Inbox) RefreshReach(reach func(session string) Reach) {
	sessions := in.openSessions()
	now := make(map[string]Reach, len(sessions))
	for _, s := range sessions {
		now[s] = reach(s)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	changed := make(map[string]bool)
	for s, r := range now {
		if prev, ok := in.reach[s]; !ok || prev != r {
			changed[s] = true
		}
	}
	in.reach = now
	if len(changed) == 0 {
		return
	}
	for _, en := range in.byID {
		if en.card.State.Open() && changed[en.card.Key.Session] {
			in.touch(en, true)
		}
	}
	in.commit()
}

// openSessions lists, once each, the sessions that have an open card.
func (in *Inbox) openSessions() []string {
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
