package inbox

import (
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// onRequested creates the card for an attention.requested, once per
// (source, session, id), and wakes the lifecycle events waiting for it.
// invalid is the envelope rule it broke (nil when none): such a request
// is shown, malformed, never as a form.
func (in *Inbox) onRequested(e *aep.Event, invalid error) {
	key := RequestKey{Source: e.Source(), Session: e.Session(), RequestID: e.ID()}
	id := key.CardID()
	if en, ok := in.byID[id]; ok {
		if en.journaled {
			in.refill(en, e, invalid)
		}
		return
	}
	in.arrivals++
	en := &entry{arrival: in.arrivals, fresh: true}
	en.card.ID, en.card.Key = id, key
	in.fill(en, e, invalid)

	in.byID[id] = en
	in.restoreOnto(en) // an answer journaled before a restart (restore.go)
	in.account(en, int64(len(e.Raw())))
	sk := subjKey{en.card.Key.Session, en.card.EventID}
	in.bySubject[sk] = append(in.bySubject[sk], en)
	in.touch(en, true)
	in.wake(sk)
}

// refill gives a settled card brought back from the journal (restore.go)
// its request as the feed brings it: what the journal did not keep
// (run, severity, when it was asked) and the agent's own words, in place
// of the journal's copy. Its answer and outcome stay.
func (in *Inbox) refill(en *entry, e *aep.Event, invalid error) {
	en.journaled = false
	in.fill(en, e, invalid)
	if size := int64(len(e.Raw())); en.load != nil {
		en.load.bytes += size - en.size
		in.bytes += size - en.size
		en.size = size
	}
	in.touch(en, true)
}

// fill sets the card's request facts from its attention.requested e.
func (in *Inbox) fill(en *entry, e *aep.Event, invalid error) {
	en.reqPos, en.reqSequenced = e.Position()
	c := &en.card
	c.Request, c.ExpiresAt, c.AskedAt = aep.Request{}, time.Time{}, time.Time{}
	c.Agent, c.Key.Session, c.Run, c.Key.Source = e.Agent(), e.Session(), e.Run(), e.Source()
	c.Capture, c.Severity = e.Capture(), e.Severity()
	c.EventID = e.ID()
	c.Tool = ""
	if cause := e.Cause(); cause != "" {
		c.Tool, _ = in.tools.get(seenKeyOf(aep.Key{Source: e.Source(), ID: cause}))
	}
	c.ReceivedAt = in.opts.Now()
	if t, err := time.Parse(time.RFC3339Nano, e.Time()); err == nil {
		c.AskedAt = t
	}
	err := e.DecodeData(&c.Request)
	c.Malformed = in.malformed(e, c.Request, err)
	if invalid != nil {
		c.Malformed = envelopeWords(e, invalid)
	}
	if c.Request.ExpiresAt != "" {
		t, perr := time.Parse(time.RFC3339Nano, c.Request.ExpiresAt)
		if perr == nil {
			c.ExpiresAt = t
		} else if c.Malformed == "" {
			c.Malformed = fmt.Sprintf("expires_at %q is not an RFC 3339 time", c.Request.ExpiresAt)
		}
	}
	c.Informational = !c.Request.Controllable()
	c.Controls = Controls(c.Request)
	c.Shape = ShapeOf(c.Request)
	c.OverBudget = c.Malformed == "" && c.Controls > in.opts.MaxControls
}

// malformed says why a request cannot be shown as the form it claims to
// be, or "" when it can.
func (in *Inbox) malformed(e *aep.Event, req aep.Request, decodeErr error) string {
	if e.ID() == "" {
		return "the request has no id"
	}
	if decodeErr != nil {
		return decodeWords("the request data", decodeErr)
	}
	max := in.opts.MaxFormItems
	if len(req.Fields) > max {
		return fmt.Sprintf("the request has %d fields, more than the %d this inbox shows", len(req.Fields), max)
	}
	if len(req.Options) > max {
		return fmt.Sprintf("the request has %d options, more than the %d this inbox shows", len(req.Options), max)
	}
	for i, f := range req.Fields {
		if len(f.Choices) > max {
			return fmt.Sprintf("field %d has %d choices, more than the %d this inbox shows", i+1, len(f.Choices), max)
		}
	}
	if err := aep.ValidateRequest(req); err != nil {
		return err.Error()
	}
	return ""
}

func sessionKeyOf(en *entry) aep.SessionKey {
	return aep.SessionKey{Source: en.card.Key.Source, Session: en.card.Key.Session}
}
