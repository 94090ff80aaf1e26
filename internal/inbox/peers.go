package inbox

// PeerJournal is a journal replicas share that lists the answers other
// instances queued (posted while the relay was away from them): on no
// feed yet, so only the journal tells the other instances of them.
type PeerJournal interface {
	// Peers lists the live queued submissions another replica holds the
	// lease of, oldest first.
	Peers() ([]Submission, error)
}

// SeePeers reads, on a journal replicas share (PeerJournal; elsewhere it
// does nothing), the answers other instances queued, and marks each one's
// open card with it (Card.Peer): the card says an answer is queued on
// another instance and takes none here, instead of offering an open
// question to answer twice. A card whose peer answer is no longer queued
// there (sent, settled, taken over by this instance) loses the mark. Call
// it every fraction of the lease, after Reclaim.
func (in *Inbox) SeePeers() {
	pj, ok := in.opts.Journal.(PeerJournal)
	if !ok {
		return
	}
	peers, err := pj.Peers() // off the lock: the database answers
	in.mu.Lock()
	defer in.mu.Unlock()
	if err != nil {
		in.noteJournalError(err)
		return
	}
	defer in.commit()
	latest := make(map[CardID]Submission, len(peers))
	for _, s := range peers {
		latest[s.Card] = s // oldest first: the latest stays
	}
	for id := range in.peered {
		s, still := latest[id]
		en, ok := in.byID[id]
		switch {
		case !ok:
			delete(in.peered, id)
		case !still || in.mine(en, s.CommandID):
			en.card.Peer = nil
			delete(in.peered, id)
			in.touch(en, true)
		}
	}
	for id, s := range latest {
		en, ok := in.byID[id]
		if !ok || in.mine(en, s.CommandID) {
			continue
		}
		if cur := en.card.Peer; cur != nil && cur.CommandID == s.CommandID && cur.State == s.State {
			continue
		}
		p := cloneSubmission(s)
		en.card.Peer = &p
		if in.peered == nil {
			in.peered = make(map[CardID]bool)
		}
		in.peered[id] = true
		in.touch(en, true)
	}
}

// mine reports whether command id is one of this inbox's own answers on
// en's card (taken over from a lapsed lease, or posted here). The caller
// holds the lock.
func (in *Inbox) mine(en *entry, id string) bool {
	return en.subs[id] != nil || (en.card.Submission != nil && en.card.Submission.CommandID == id)
}
