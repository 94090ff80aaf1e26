package agent

import (
	"slices"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// verdict is a decision on a command before its ack is emitted: reason ""
// accepts, and then runs after control.accepted.
type verdict struct {
	reason, detail string
	then           func(now time.Time)
}

func accept(then func(now time.Time)) verdict { return verdict{then: then} }

func reject(reason, detail string) verdict { return verdict{reason: reason, detail: detail} }

// handleCommand is the target side of AEP-0004 for one transmission of a
// command: dedupe on (source, id); a redelivery re-emits the recorded ack,
// byte-identical, and changes nothing else; a new command gets exactly one
// decision, its ack, and, when accepted, its outcome events.
func (a *Agent) handleCommand(raw []byte, cmd *aep.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.changedLocked()
	now := a.cfg.Now()

	if r, ok := a.redeliveredLocked(cmd.Key(), raw, now); ok {
		if r.ack != nil {
			a.enqueueLocked(r.ack)
		}
		a.log.Info("command redelivered", "source", r.Source, "id", r.ID, "type", r.Type,
			"count", r.Count, "decision", string(r.Decision.Outcome), "reacked", r.ack != nil)
		return
	}
	r := a.recordLocked(cmd, raw, now)
	defer func() {
		a.log.Info("command received", "source", r.Source, "id", r.ID, "type", r.Type, "session", r.Session,
			"decision", string(r.Decision.Outcome), "reason", r.Decision.Reason, "detail", r.Decision.Detail)
	}()

	if a.cfg.NeverAck {
		r.Decision = Decision{Outcome: OutcomeIgnored, Detail: "never-ack mode: not acknowledged, not executed"}
		return
	}
	s := a.byID[cmd.Session()]
	if s == nil {
		r.Decision = Decision{Outcome: OutcomeDropped, Detail: "no session of this agent"}
		return
	}

	var v verdict
	switch {
	case !slices.Contains(accepts, cmd.Type()):
		v = reject(aep.ReasonUnsupported, "this agent accepts control.attention.respond and control.cancel")
	case cmd.Type() == "control.attention.respond":
		v = a.decideRespondLocked(s, cmd)
	default:
		v = a.decideCancelLocked(s, cmd)
	}

	ack := a.ackLocked(now, s, cmd, v)
	if ack == nil {
		return
	}
	r.ack, r.Ack = ack, ack.Raw()
	if v.reason != "" {
		var rej aep.Rejected
		_ = ack.DecodeData(&rej)
		r.Decision = Decision{Outcome: OutcomeRejected, Reason: v.reason, Detail: rej.Detail}
		return
	}
	r.Decision = Decision{Outcome: OutcomeAccepted}
	if v.then != nil {
		v.then(now)
	}
}

// ackLocked emits the ack of v: control.accepted {} at metadata, or
// control.rejected. A rejection's detail is gated at redacted (AEP-0004 §3):
// it is redacted and the ack declares redacted, or, in a session below
// redacted, the detail is left out.
func (a *Agent) ackLocked(now time.Time, s *session, cmd *aep.Event, v verdict) *aep.Event {
	if v.reason == "" {
		return a.emitLocked(s, now, out{typ: "control.accepted", cause: cmd.ID(), capture: aep.CaptureMetadata, data: aep.Accepted{}})
	}
	rej := aep.Rejected{Reason: v.reason}
	c := aep.CaptureMetadata
	if v.detail != "" && s.capture >= aep.CaptureRedacted {
		rej.Detail = aep.Redact(v.detail)
		c = aep.CaptureRedacted
	}
	return a.emitLocked(s, now, out{typ: "control.rejected", cause: cmd.ID(), capture: c, data: rej})
}

// decideRespondLocked judges control.attention.respond.
func (a *Agent) decideRespondLocked(s *session, cmd *aep.Event) verdict {
	if cmd.Subject() == "" {
		return reject(aep.ReasonInvalid, "the command has no subject (the id of the attention.requested it answers)")
	}
	q := s.request(cmd.Subject())
	if q == nil {
		// Nothing by that id was asked here: the command names no valid
		// target, which is what invalid means (refused is a decision about
		// a real request).
		return reject(aep.ReasonInvalid, "no request with that id in this session")
	}
	if q.state != StatePending {
		return reject(aep.ReasonRefused, "the request is already settled ("+string(q.state)+")")
	}
	if !q.req.Controllable() {
		return reject(aep.ReasonRefused, "the request is answered out of band (respond_via oob), not over control")
	}
	var d aep.Respond
	if err := cmd.DecodeData(&d); err != nil {
		return reject(aep.ReasonInvalid, "data.answer is not an answer object")
	}
	applied, problem := interpret(q.req, q.spec.refusing, d.Answer)
	if problem != "" {
		return reject(aep.ReasonInvalid, problem)
	}
	if reason := a.rejectRateLocked(); reason != "" {
		detail := "the demo agent refuses some answers (--reject-rate): send it again"
		if reason == aep.ReasonBusy {
			detail = "the demo agent is busy (--reject-rate): send it again"
		}
		return reject(reason, detail)
	}
	return accept(func(now time.Time) { a.applyAnswerLocked(now, s, q, cmd, applied) })
}

// rejectRateLocked returns refused or busy (alternating) for RejectRate of
// the calls, "" otherwise.
func (a *Agent) rejectRateLocked() string {
	if a.cfg.RejectRate <= 0 || a.cfg.Rand() >= a.cfg.RejectRate {
		return ""
	}
	a.rejectNext++
	if a.rejectNext%2 == 1 {
		return aep.ReasonRefused
	}
	return aep.ReasonBusy
}

// applyAnswerLocked emits the outcome of an accepted answer:
// attention.answered (the applied answer at the session's capture, via
// control, by the sender) and attention.resolved, both caused by the
// command; then the scenario carries on.
func (a *Agent) applyAnswerLocked(now time.Time, s *session, q *request, cmd *aep.Event, applied aep.Answer) {
	q.state = StateAnswered
	a.emitLocked(s, now, out{
		typ: "attention.answered", subject: q.id(), run: q.run, cause: cmd.ID(),
		data: aep.Answered{Answer: answerAt(q.req.Fields, applied, s.capture), By: cmd.Agent(), Via: aep.ViaControl},
	})
	resolved := a.emitLocked(s, now, out{
		typ: "attention.resolved", subject: q.id(), run: q.run, cause: cmd.ID(),
		data: aep.Resolved{Resolution: aep.ResolutionAnswered, LatencyMS: aep.Int64(millis(now.Sub(q.asked)))},
	})
	a.log.Info("request answered", "session", s.id, "request", q.id(), "by", cmd.Agent(), "command", cmd.ID())
	a.afterOutcomeLocked(now, s, q, causeOf(resolved))
}

// decideCancelLocked judges control.cancel. Scope run cancels the running
// run (the one the command names, or the current one); scope session also
// ends the session.
func (a *Agent) decideCancelLocked(s *session, cmd *aep.Event) verdict {
	var c aep.Cancel
	if err := cmd.DecodeData(&c); err != nil {
		return reject(aep.ReasonInvalid, "data is not a control.cancel payload")
	}
	switch c.Scope {
	case "run":
		if s.ended || s.run == nil {
			return reject(aep.ReasonRefused, "no run is running in this session")
		}
		if cmd.Run() != "" && cmd.Run() != s.run.id {
			return reject(aep.ReasonRefused, "the named run is not running")
		}
		return accept(func(now time.Time) {
			a.cancelRunLocked(now, s, cmd, c.Reason)
			if s.sc.ask == nil && !a.stopping {
				// Standby keeps a running run for the next probe.
				a.startRunLocked(now, s, triggerAgent)
				return
			}
			a.maybeEndLocked(now, s, "normal", cmd.ID())
		})
	case "session":
		if s.ended {
			return reject(aep.ReasonRefused, "the session has ended")
		}
		return accept(func(now time.Time) {
			if s.run != nil {
				a.cancelRunLocked(now, s, cmd, c.Reason)
			}
			for _, q := range s.pending("") {
				a.dismissLocked(now, s, q, cmd.ID())
			}
			a.endLocked(now, s, "killed", cmd.ID())
		})
	}
	return reject(aep.ReasonInvalid, `data.scope must be "run" or "session"`)
}

// cancelRunLocked closes the running run's pending requests (dismissed)
// and emits its one run.cancelled, both caused by the command.
func (a *Agent) cancelRunLocked(now time.Time, s *session, cmd *aep.Event, reason string) {
	r := s.run
	for _, q := range s.pending(r.id) {
		a.dismissLocked(now, s, q, cmd.ID())
	}
	s.run = nil
	a.emitLocked(s, now, out{
		typ: "run.cancelled", run: r.id, cause: cmd.ID(), severity: "notice",
		data: runCancelledData{By: "control", Reason: textAt(reason, s.capture), DurationMS: millis(now.Sub(r.started))},
	})
	a.log.Info("run cancelled", "session", s.id, "run", r.id, "command", cmd.ID())
}
