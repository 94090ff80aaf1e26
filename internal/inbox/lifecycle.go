package inbox

import "time"

// derive recomputes a card's state from its facts and the clock, keeps the
// settled list in step, and reports whether anything shown changed.
//
// Precedence: resolved, timed out, answered, session ended, expired,
// routed, pending. An outcome from the agent outranks what the inbox
// infers (an ending, a passed deadline).
func (in *Inbox) derive(en *entry, now time.Time) bool {
	c := &en.card
	prevState, prevEnded, prevElsewhere := c.State, c.SessionEnded, c.AnsweredElsewhere

	c.SessionEnded = in.endedFor(en)
	c.AnsweredElsewhere = c.Recorded != nil && !en.ownOutcome()
	silenced := in.silence(en, now)
	switch {
	case en.resolved:
		c.State = StateResolved
	case en.timedOut:
		c.State = StateTimedOut
	case c.Recorded != nil:
		c.State = StateAnswered
	case c.SessionEnded:
		c.State = StateEnded
	case c.Expired(now):
		c.State = StateExpired
	case len(c.Routes) > 0:
		c.State = StateRouted
	default:
		c.State = StatePending
	}

	switch open := c.State.Open(); {
	case !open && en.settledOrder == 0:
		in.settles++
		en.settledOrder = in.settles
		in.settled = append(in.settled, en)
		en.settledChanged(true)
	case open && en.settledOrder != 0:
		en.settledOrder = 0
		en.settledChanged(false)
		for i, x := range in.settled {
			if x == en {
				in.settled = append(in.settled[:i], in.settled[i+1:]...)
				break
			}
		}
	}
	queueEnded := in.settleQueued(en, now)
	return c.State != prevState || c.SessionEnded != prevEnded || c.AnsweredElsewhere != prevElsewhere || silenced || queueEnded
}

// silence marks the card's Responders that got no ack within the ack
// window (Options.AckWindow) as Silent, and reports whether any changed:
// their lock on the form ends.
func (in *Inbox) silence(en *entry, now time.Time) bool {
	changed := false
	window := time.Duration(-1)
	for i := range en.card.Responders {
		r := &en.card.Responders[i]
		if r.Ack != "" || r.Silent {
			continue
		}
		if window < 0 {
			window = in.opts.AckWindow(en.card.Key.Session)
		}
		if !now.Before(r.SeenAt.Add(window)) {
			r.Silent, changed = true, true
		}
	}
	return changed
}

// waitingAck reports whether a Responder of the card waits for its ack
// within its window: Sweep must look at the card again.
func (en *entry) waitingAck() bool {
	for _, r := range en.card.Responders {
		if r.Ack == "" && !r.Silent {
			return true
		}
	}
	return false
}

// endedFor reports whether the request's session ended after it was asked.
func (in *Inbox) endedFor(en *entry) bool {
	m, ok := in.ended.get(sessionDigest(sessionKeyOf(en)))
	if !ok {
		return false
	}
	if !m.sequenced || !en.reqSequenced {
		return true
	}
	return en.reqPos.Less(m.pos)
}

// ownOutcome reports whether the recorded answer came from one of our
// submissions: its cause is our command or our command's ack, or it names
// no cause while one of our submissions was accepted.
func (en *entry) ownOutcome() bool {
	cause := en.card.Recorded.Cause
	if cause != "" {
		return en.ownIDs[cause]
	}
	return en.recordedCommand() != nil
}
