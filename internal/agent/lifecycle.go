package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aepforms/aepforms/internal/aep"
)

// clientName is session.started data.client.name.
const clientName = "aepforms-demo-agent"

type sessionStartedData struct {
	Label  string      `json:"label,omitempty"`
	Client *clientInfo `json:"client,omitempty"`
}

type clientInfo struct {
	Name string `json:"name"`
}

type runStartedData struct {
	Trigger string `json:"trigger,omitempty"`
}

type runFinishedData struct {
	DurationMS int64 `json:"duration_ms"`
}

type runCancelledData struct {
	By         string `json:"by"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

type sessionEndedData struct {
	Reason     string `json:"reason"`
	DurationMS int64  `json:"duration_ms"`
	Runs       int    `json:"runs"`
}

// Run triggers (run.started data.trigger).
const (
	triggerUser  = "user"
	triggerAgent = "agent"
)

// millis is d in whole milliseconds, never negative.
func millis(d time.Duration) int64 { return max(d.Milliseconds(), 0) }

// startLocked opens the configured scenarios' sessions, once, and starts
// the Every ticks.
func (a *Agent) startLocked(now time.Time) {
	if a.started || a.stopping {
		return
	}
	a.started = true
	for _, sc := range a.scenarios {
		a.openLocked(now, sc, false)
	}
	a.floodLocked(now)
	if a.cfg.Every > 0 && len(RepeatableScenarios()) > 0 {
		a.scheduleLocked(now, a.cfg.Every, a.everyLocked)
	}
}

// floodLocked asks Config.Pending deploy forms, round-robin over up to
// ten sessions of their own.
func (a *Agent) floodLocked(now time.Time) {
	if a.cfg.Pending <= 0 {
		return
	}
	sc, _ := lookupScenario(ScenarioDeploy)
	sessions := make([]*session, 0, 10)
	for i := range a.cfg.Pending {
		if len(sessions) < cap(sessions) {
			sessions = append(sessions, a.openFloodLocked(now, sc)) // asks once on opening
			continue
		}
		a.askLocked(now, sessions[i%len(sessions)])
	}
}

// openFloodLocked opens one of floodLocked's sessions: marked before its
// first question, so every question it asks names a service of its own.
func (a *Agent) openFloodLocked(now time.Time, sc *scenario) *session {
	a.flooding = true
	defer func() { a.flooding = false }()
	return a.openLocked(now, sc, false)
}

// floodServices name the services of the questions asked by Pending, so
// a page of thousands reads as thousands of questions, not one repeated.
var floodServices = []string{"payments", "checkout", "search", "billing", "inventory", "accounts", "notifications", "reports", "gateway", "ledger", "catalog", "shipping"}

// floodPrompt is the n-th Pending question's prompt (0-based): the
// service first, so a row cut short on a phone still says which.
func floodPrompt(base string, n int) string {
	return fmt.Sprintf("%s-%d: %s", floodServices[n%len(floodServices)], n/len(floodServices)+1, base)
}

// openLocked opens a session for sc: session.started, run.started and the
// scenario's request. Session ids are new ULIDs per process, so a
// (session, epoch) is never reused across restarts.
func (a *Agent) openLocked(now time.Time, sc *scenario, extra bool) *session {
	id := sc.name + "-" + ulid.Make().String()
	s := &session{
		flood:   a.flooding,
		id:      id,
		source:  fmt.Sprintf("aep://%s/agent/%s/session/%s", a.cfg.Host, url.PathEscape(a.cfg.Agent), id),
		sc:      sc,
		capture: min(a.cfg.Capture, sc.ceiling),
		extra:   extra,
		opened:  now,
	}
	a.sessions = append(a.sessions, s)
	a.byID[id] = s
	a.pruneLocked()
	a.emitLocked(s, now, out{typ: "session.started", data: sessionStartedData{
		Label: textAt(sc.label, s.capture), Client: &clientInfo{Name: clientName},
	}})
	a.log.Info("session opened", "scenario", sc.name, "session", id, "source", s.source, "capture", s.capture.String())
	a.startRunLocked(now, s, triggerUser)
	if sc.ask != nil {
		a.askLocked(now, s)
	}
	return s
}

// pruneLocked forgets the oldest ended sessions beyond MaxSessions.
func (a *Agent) pruneLocked() {
	excess := len(a.sessions) - a.cfg.MaxSessions
	if excess <= 0 {
		return
	}
	kept := a.sessions[:0]
	for _, s := range a.sessions {
		if excess > 0 && s.ended {
			delete(a.byID, s.id)
			excess--
			continue
		}
		kept = append(kept, s)
	}
	clear(a.sessions[len(kept):])
	a.sessions = kept
}

// startRunLocked starts a new run of s.
func (a *Agent) startRunLocked(now time.Time, s *session, trigger string) {
	r := &run{id: "run-" + ulid.Make().String(), started: now}
	s.run = r
	s.runs = append(s.runs, r.id)
	a.emitLocked(s, now, out{typ: "run.started", run: r.id, data: runStartedData{Trigger: trigger}})
	a.log.Info("run started", "scenario", s.sc.name, "session", s.id, "run", r.id)
}

// askLocked raises the scenario's request in the current run of s.
func (a *Agent) askLocked(now time.Time, s *session) {
	sp := s.sc.ask(a.cfg.Agent)
	if s.flood {
		sp.req.Prompt = floodPrompt(sp.req.Prompt, a.floodAsked)
		a.floodAsked++
	}
	cause := ""
	if sp.tool != "" {
		if ps := a.cfg.PermissionPrompts; len(ps) > 0 {
			sp.req.Prompt = ps[a.permAsked%len(ps)]
		}
		a.permAsked++
		// The tool call the request asks about, as a coding agent
		// emits it: the request's cause names it.
		if s.capture > aep.CaptureNone {
			cause = causeOf(a.emitLocked(s, now, out{typ: "tool.requested", run: s.run.id,
				data: map[string]any{"tool": map[string]string{"name": sp.tool, "call_id": "call-" + strconv.Itoa(a.permAsked)}}}))
		}
	}
	req := requestAt(sp.req, sp.metaPrompt, s.capture)
	if sp.expires {
		req.ExpiresAt = now.Add(a.cfg.ExpiresIn).UTC().Format(timeLayout)
	}
	ev := a.emitLocked(s, now, out{typ: "attention.requested", run: s.run.id, cause: cause, severity: "notice", data: req})
	if ev == nil {
		return
	}
	q := &request{ev: ev, req: req, run: s.run.id, spec: sp, asked: now, state: StatePending}
	s.requests = append(s.requests, q)
	a.log.Info("request asked", "scenario", s.sc.name, "session", s.id, "run", q.run, "request", q.id(), "kind", req.Kind)
	if sp.expires {
		a.scheduleLocked(now, a.cfg.ExpiresIn, func(now time.Time) { a.timeoutLocked(now, s, q) })
	}
	if sp.oob != nil {
		a.scheduleLocked(now, a.cfg.OOBResolveAfter, func(now time.Time) { a.answerOOBLocked(now, s, q) })
	}
}

// timeoutLocked times q out if it is still pending.
func (a *Agent) timeoutLocked(now time.Time, s *session, q *request) {
	if q.state != StatePending || s.ended {
		return
	}
	q.state = StateTimedOut
	ev := a.emitLocked(s, now, out{
		typ: "attention.timeout", subject: q.id(), run: q.run, cause: q.id(), severity: "notice",
		data: aep.Timeout{AfterMS: aep.Int64(millis(now.Sub(q.asked)))},
	})
	a.log.Info("request timed out", "session", s.id, "request", q.id())
	a.afterOutcomeLocked(now, s, q, causeOf(ev))
}

// answerOOBLocked answers q as the agent's own terminal user would
// (via oob), then resolves it.
func (a *Agent) answerOOBLocked(now time.Time, s *session, q *request) {
	if q.state != StatePending || s.ended {
		return
	}
	q.state = StateAnswered
	answered := a.emitLocked(s, now, out{
		typ: "attention.answered", subject: q.id(), run: q.run, cause: q.id(),
		data: aep.Answered{Answer: answerAt(q.req.Fields, *q.spec.oob, s.capture), By: oobResponder, Via: aep.ViaOOB},
	})
	resolved := a.emitLocked(s, now, out{
		typ: "attention.resolved", subject: q.id(), run: q.run, cause: causeOf(answered),
		data: aep.Resolved{Resolution: aep.ResolutionAnswered, LatencyMS: aep.Int64(millis(now.Sub(q.asked)))},
	})
	a.log.Info("request answered out of band", "session", s.id, "request", q.id())
	a.afterOutcomeLocked(now, s, q, causeOf(resolved))
}

// afterOutcomeLocked carries a scenario on once q is settled: the run
// finishes when nothing of it is pending; a timed-out expiring form is asked
// again in a new run when ReaskExpired; otherwise the session ends once
// nothing is pending.
func (a *Agent) afterOutcomeLocked(now time.Time, s *session, q *request, cause string) {
	if s.run != nil && s.run.id == q.run && len(s.pending(q.run)) == 0 {
		a.finishRunLocked(now, s, cause)
	}
	if q.state == StateTimedOut && q.spec.expires && a.cfg.ReaskExpired && !a.stopping {
		a.startRunLocked(now, s, triggerAgent)
		a.askLocked(now, s)
		return
	}
	a.maybeEndLocked(now, s, "normal", cause)
}

func (a *Agent) finishRunLocked(now time.Time, s *session, cause string) {
	r := s.run
	s.run = nil
	a.emitLocked(s, now, out{typ: "run.finished", run: r.id, cause: cause, data: runFinishedData{DurationMS: millis(now.Sub(r.started))}})
	a.log.Info("run finished", "session", s.id, "run", r.id)
}

// maybeEndLocked ends s once it has no run and nothing pending. The standby
// session has no request and never ends this way.
func (a *Agent) maybeEndLocked(now time.Time, s *session, reason, cause string) {
	if s.ended || s.run != nil || len(s.pending("")) > 0 {
		return
	}
	a.endLocked(now, s, reason, cause)
}

func (a *Agent) endLocked(now time.Time, s *session, reason, cause string) {
	s.ended = true
	a.emitLocked(s, now, out{typ: "session.ended", cause: cause, data: sessionEndedData{
		Reason: reason, DurationMS: millis(now.Sub(s.opened)), Runs: len(s.runs),
	}})
	// Stopping ends every session at once: Run says so in one line.
	level := slog.LevelInfo
	if a.stopping {
		level = slog.LevelDebug
	}
	a.log.Log(context.Background(), level, "session ended", "scenario", s.sc.name, "session", s.id, "reason", reason)
}

// everyLocked asks one more question (a new session of the next repeatable
// scenario) and schedules the next tick. With MaxExtra questions asked
// this way still pending, it first dismisses the oldest of them, so at
// most MaxExtra are ever pending.
func (a *Agent) everyLocked(now time.Time) {
	if a.stopping {
		return
	}
	a.scheduleLocked(now, a.cfg.Every, a.everyLocked)
	var pending []*session
	for _, s := range a.sessions { // oldest first
		if s.extra && !s.ended && len(s.pending("")) > 0 {
			pending = append(pending, s)
		}
	}
	for _, s := range pending[:max(len(pending)-a.cfg.MaxExtra+1, 0)] {
		for _, q := range s.pending("") {
			a.dismissLocked(now, s, q, q.id())
			a.log.Info("request dismissed: newer questions are waiting", "session", s.id, "request", q.id())
			a.afterOutcomeLocked(now, s, q, q.id())
		}
	}
	names := RepeatableScenarios()
	sc, _ := lookupScenario(names[a.extraNext%len(names)])
	a.extraNext++
	a.openLocked(now, sc, true)
}

// closeAllLocked closes every open session for shutdown: pending requests
// dismissed, the running run cancelled (by shutdown), session.ended.
func (a *Agent) closeAllLocked(now time.Time) {
	for _, s := range a.sessions {
		if s.ended {
			continue
		}
		for _, q := range s.pending("") {
			a.dismissLocked(now, s, q, q.id())
		}
		if s.run != nil {
			r := s.run
			s.run = nil
			a.emitLocked(s, now, out{typ: "run.cancelled", run: r.id, severity: "notice",
				data: runCancelledData{By: "shutdown", DurationMS: millis(now.Sub(r.started))}})
		}
		a.endLocked(now, s, "normal", "")
	}
}

// dismissLocked closes q without an answer.
func (a *Agent) dismissLocked(now time.Time, s *session, q *request, cause string) {
	q.state = StateDismissed
	a.emitLocked(s, now, out{
		typ: "attention.resolved", subject: q.id(), run: q.run, cause: cause,
		data: aep.Resolved{Resolution: aep.ResolutionDismissed, LatencyMS: aep.Int64(millis(now.Sub(q.asked)))},
	})
}

// causeOf is ev's id, "" for nil.
func causeOf(ev *aep.Event) string {
	if ev == nil {
		return ""
	}
	return ev.ID()
}
