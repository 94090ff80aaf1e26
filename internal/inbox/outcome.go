package inbox

// Outcomes matched by command id.
//
// A card may carry more than one of this inbox's commands: an owed answer
// the operator replaced ("Answer differently"), or one adopted from the
// journal beside a later post. Every ack (control.accepted/rejected, by
// its cause) and every record (attention.answered, by its cause, followed
// one hop from an ack to its command) settles exactly the command it
// names, never whichever is the card's latest: History shows each
// command's own fate, and the one the agent recorded is the one marked
// recorded.

// keepSub makes s one of en's own submissions, found by its command id.
// An id already kept keeps its first pointer (the card's copy). The
// caller holds the lock.
func (in *Inbox) keepSub(en *entry, s *Submission) {
	if en.subs == nil {
		en.subs = make(map[string]*Submission)
	}
	if _, ok := en.subs[s.CommandID]; !ok {
		en.subs[s.CommandID] = s
	}
}

// sub returns en's submission of command id, nil when none.
func (en *entry) sub(id string) *Submission {
	if s := en.subs[id]; s != nil {
		return s
	}
	if s := en.card.Submission; s != nil && s.CommandID == id {
		return s
	}
	return nil
}

// noteAck remembers that ack ackID answered our command commandID.
func (en *entry) noteAck(ackID, commandID string) {
	if en.ackOf == nil {
		en.ackOf = make(map[string]string)
	}
	en.ackOf[ackID] = commandID
}

// recordedCommand returns the submission of this inbox the agent's
// record (card.Recorded) credits: the one its cause names, or the
// command of the ack its cause names; with no cause, the one accepted
// submission (the latest, if accepted, when several are). Nil when the
// record is not one of ours, or names nothing this card holds.
func (en *entry) recordedCommand() *Submission {
	r := en.card.Recorded
	if r == nil {
		return nil
	}
	if r.Cause != "" {
		if s := en.sub(r.Cause); s != nil {
			return s
		}
		if id, ok := en.ackOf[r.Cause]; ok {
			return en.sub(id)
		}
		return nil
	}
	if s := en.card.Submission; s != nil && s.State == SubmissionAccepted {
		return s
	}
	var found *Submission
	for _, s := range en.subs {
		if s.State == SubmissionAccepted {
			if found != nil {
				return nil // two accepted and no cause: which one is unknown
			}
			found = s
		}
	}
	return found
}
