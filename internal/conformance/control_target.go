package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// ControlTarget describes a control-capable target (AEP-0004 §7) that a
// RunControl checks through the relay it is connected to.
type ControlTarget struct {
	// BaseURL is the relay's base, e.g. http://127.0.0.1:8787.
	BaseURL string
	// Token authenticates to the relay; control needs one (AEP-0004 §4.1).
	Token string
	// Session is the target session to probe: one with a running run and
	// nothing pending (a standby session). "" finds one: the first live
	// roster claim whose replay shows that.
	Session string
	// Agent, when set, limits the search to roster claims by this agent.
	Agent string
	// Form, when set, answers a pending form request with Form.Values and
	// checks the outcome events.
	Form *FormAnswer
	// CheckTimeout bounds each check (default 5 s; a check waiting for an
	// ack also stays inside the target's declared ack window).
	CheckTimeout time.Duration
	// HTTPClient makes the HTTP requests; nil uses a client of its own.
	HTTPClient *http.Client
}

// FormAnswer is the answer RunControl sends to a pending form.
type FormAnswer struct {
	// Session holds the form; "" finds the first live claim with a pending
	// kind:"form" request whose field ids include every key of Values.
	Session string
	// Values is answer.values, sent as is.
	Values map[string]any
}

// ControlChecks lists the names of the checks RunControl performs, in order.
func ControlChecks() []string {
	var out []string
	for _, c := range targetChecks() {
		out = append(out, c.name)
	}
	return out
}

// targetCheck is one named control-target check.
type targetCheck struct {
	name string
	fn   func(c *controlRun, ctx context.Context) error
}

func targetChecks() []targetCheck {
	return []targetCheck{
		{"target.declared", (*controlRun).checkDeclared},
		{"target.ack-within-window", (*controlRun).checkAck},
		{"target.unsupported-nack", (*controlRun).checkUnsupported},
		{"target.redelivery-reack", (*controlRun).checkRedelivery},
		{"target.form-answer", (*controlRun).checkForm},
		{"target.cancel", (*controlRun).checkCancel},
		{"target.one-decision-per-command", (*controlRun).checkOneDecision},
	}
}

// controlRun is the state RunControl's checks share: one consumer
// connection that sends the commands and, subscribed to the target's
// sessions, observes its acks and outcomes.
type controlRun struct {
	*runner
	ct      ControlTarget
	w       *wsConn
	session string
	accepts []string
	window  time.Duration
	form    *formRequest
	sent    []*aep.Event // every command sent, for the one-decision check
	setup   error
}

// formRequest is the pending form RunControl answers.
type formRequest struct {
	session string
	event   *aep.Event
}

// RunControl checks the control target ct describes and reports every
// check. The cancel check ends the target's run, so it runs last but one.
func RunControl(ctx context.Context, ct ControlTarget) Report {
	c := &controlRun{runner: newRunner(Target{BaseURL: ct.BaseURL, Token: ct.Token, CheckTimeout: ct.CheckTimeout, HTTPClient: ct.HTTPClient}), ct: ct}
	defer func() {
		if c.w != nil {
			c.w.close()
		}
	}()
	var rep Report
	for _, tc := range targetChecks() {
		rep.Results = append(rep.Results, c.run(ctx, check{name: tc.name, fn: func(ctx context.Context, _ *runner) error {
			if c.setup != nil && tc.name != "target.declared" {
				return fmt.Errorf("no target to check: %v", c.setup)
			}
			return tc.fn(c, ctx)
		}}))
	}
	return rep
}

// sessionState is what a session's replay says about it.
type sessionState struct {
	ended    bool
	runs     []string              // open runs, oldest first
	pending  map[string]*aep.Event // open requests by id
	requests []string              // their ids in order
}

func (c *controlRun) state(ctx context.Context, s string) (sessionState, error) {
	items, err := c.history(ctx, filterSession(s), nil)
	if err != nil {
		return sessionState{}, err
	}
	st := sessionState{pending: map[string]*aep.Event{}}
	for _, it := range events(items) {
		e, err := aep.Decode([]byte(it.data))
		if err != nil {
			continue
		}
		switch e.Type() {
		case "session.ended":
			st.ended = true
		case "run.started":
			st.runs = append(st.runs, e.Run())
		case "run.finished", "run.cancelled", "run.failed":
			st.runs = slices.DeleteFunc(st.runs, func(r string) bool { return r == e.Run() })
		case "attention.requested":
			st.pending[e.ID()] = e
			st.requests = append(st.requests, e.ID())
		case "attention.resolved", "attention.timeout":
			delete(st.pending, e.Subject())
			st.requests = slices.DeleteFunc(st.requests, func(id string) bool { return id == e.Subject() })
		}
	}
	return st, nil
}

func (c *controlRun) checkDeclared(ctx context.Context) error {
	c.setup = fmt.Errorf("target.declared did not complete")
	w, err := c.openConsumer(ctx)
	if err != nil {
		return err
	}
	c.w = w
	m, err := askRoster(ctx, w, "target-roster")
	if err != nil {
		return err
	}
	var body struct {
		Entries []rosterEntry `json:"entries"`
	}
	if err := json.Unmarshal(m.raw, &body); err != nil || m.typ != "roster" {
		return fmt.Errorf("roster: got %s, want {type:roster, entries}", clip(m.raw))
	}
	claims := map[string][]rosterEntry{}
	var order []string
	for _, e := range body.Entries {
		if c.ct.Agent != "" && e.Agent != c.ct.Agent {
			continue
		}
		if _, ok := claims[e.Session]; !ok {
			order = append(order, e.Session)
		}
		claims[e.Session] = append(claims[e.Session], e)
	}
	if err := c.findSessions(ctx, order); err != nil {
		return err
	}
	entries := claims[c.session]
	if len(entries) != 1 {
		return fmt.Errorf("roster: got %d live claims of session %s, want exactly 1 (routable)", len(entries), c.session)
	}
	var ctl struct {
		Accepts     []string `json:"accepts"`
		AckWindowMS *int64   `json:"ack_window_ms"`
	}
	if len(entries[0].Control) == 0 || json.Unmarshal(entries[0].Control, &ctl) != nil || len(ctl.Accepts) == 0 {
		return fmt.Errorf("roster entry for %s: control got %s, want the hello's capabilities.control with a non-empty accepts (AEP-0004 §7: declare control.accepts)", c.session, entries[0].Control)
	}
	c.accepts, c.window = ctl.Accepts, 10*time.Second
	if ctl.AckWindowMS != nil {
		c.window = time.Duration(*ctl.AckWindowMS) * time.Millisecond
	}
	sessions := []string{c.session}
	if c.form != nil && c.form.session != c.session {
		sessions = append(sessions, c.form.session)
	}
	if _, err := w.subscribe(ctx, map[string]any{"id": "target", "filter": map[string]any{"session": sessions}}); err != nil {
		return err
	}
	c.setup = nil
	return passf("session %s, accepts %v, ack window %s", c.session, c.accepts, c.window)
}

// findSessions picks the standby session and the form to answer among the
// claimed sessions (or takes the ones named).
func (c *controlRun) findSessions(ctx context.Context, claimed []string) error {
	c.session = c.ct.Session
	wantForm := c.ct.Form != nil
	for _, s := range claimed {
		if c.session != "" && (!wantForm || c.form != nil) {
			break
		}
		st, err := c.state(ctx, s)
		if err != nil {
			return err
		}
		if c.session == "" && !st.ended && len(st.runs) > 0 && len(st.pending) == 0 {
			c.session = s
		}
		if wantForm && c.form == nil && (c.ct.Form.Session == "" || c.ct.Form.Session == s) {
			for _, id := range st.requests {
				if e := st.pending[id]; fitsForm(e, c.ct.Form.Values) {
					c.form = &formRequest{session: s, event: e}
					break
				}
			}
		}
	}
	if c.session == "" {
		return fmt.Errorf("no live claim with a running run and nothing pending among %d roster sessions: want a standby session to probe", len(claimed))
	}
	return nil
}

// fitsForm reports whether e is a controllable kind:"form" request whose
// field ids include every key of values.
func fitsForm(e *aep.Event, values map[string]any) bool {
	var req aep.Request
	if e.DecodeData(&req) != nil || req.Kind != aep.KindForm || !req.Controllable() {
		return false
	}
	for k := range values {
		if !slices.ContainsFunc(req.Fields, func(f aep.FieldSpec) bool { return f.ID == k }) {
			return false
		}
	}
	return true
}

// targetCommand builds a command to the target from the checker's sender.
func (c *controlRun) targetCommand(session, typ, subject, run string, data any) *aep.Event {
	e := ev{agent: c.prefix + "-sender", session: session, seq: -1, typ: typ, subject: subject, cause: subject, run: run, capture: "metadata", data: data}
	return c.build(e)
}

// send sends cmd on the observer connection and records it.
func (c *controlRun) send(ctx context.Context, cmd *aep.Event) (int, time.Time, error) {
	c.sent = append(c.sent, cmd)
	n, err := c.w.sendCommand(ctx, cmd)
	return n, time.Now(), err
}

func isAck(m wsMsg) bool { return m.typ == "control.accepted" || m.typ == "control.rejected" }

// ack waits, inside the declared window, for the ack of cmd at or after
// from (or a relay-behalf refusal, returned as the error frame).
func (c *controlRun) ack(ctx context.Context, from int, sentAt time.Time, cmd *aep.Event) (wsMsg, error) {
	wctx, cancel := context.WithDeadline(ctx, sentAt.Add(c.window))
	defer cancel()
	_, m, err := c.w.next(wctx, from, func(m wsMsg) bool {
		return (isAck(m) && str(m.obj, "cause") == cmd.ID()) || errorFor(cmd.ID())(m)
	})
	if err != nil {
		return m, fmt.Errorf("%s %s: no ack with cause = its id within the declared ack window of %s: %w", cmd.Type(), cmd.ID(), c.window, err)
	}
	return m, nil
}

// unknownRespond is a respond to a request the target never asked: the
// target must still make one ack decision.
func (c *controlRun) unknownRespond() *aep.Event {
	return c.targetCommand(c.session, respondType, c.uniq("no-such-request"), "", map[string]any{"answer": map[string]any{"option": "allow"}})
}

func (c *controlRun) checkAck(ctx context.Context) error {
	cmd := c.unknownRespond()
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	m, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return err
	}
	if m.typ == "error" {
		return fmt.Errorf("the relay refused the command (%s), want it to reach the target", clip(m.raw))
	}
	return passf("%s in %s", m.typ, time.Since(at).Round(time.Microsecond))
}

func (c *controlRun) checkUnsupported(ctx context.Context) error {
	typ := ""
	for _, t := range []string{"control.pause", "control.resume", "x.conformance.control.probe"} {
		if !slices.Contains(c.accepts, t) {
			typ = t
			break
		}
	}
	cmd := c.targetCommand(c.session, typ, "", "", map[string]any{})
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	m, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return err
	}
	if m.typ == "error" {
		if str(m.obj, "code") != "unsupported" {
			return fmt.Errorf("%s outside accepts %v: relay refused with %s, want code unsupported", typ, c.accepts, clip(m.raw))
		}
		c.sent = c.sent[:len(c.sent)-1] // never reached the target
		return passf("nacked unsupported on the target's behalf by the relay (AEP-0004 §4.2 MAY): %s", clip(m.raw))
	}
	var rej aep.Rejected
	if m.typ != "control.rejected" || json.Unmarshal(m.obj["data"], &rej) != nil || rej.Reason != aep.ReasonUnsupported {
		return fmt.Errorf("%s outside accepts %v: got %s, want control.rejected {reason:unsupported}", typ, c.accepts, clip(m.raw))
	}
	return nil
}

// checkRedelivery: the same command again (same id, same source) is
// answered with the recorded ack, byte-identical, and nothing re-executes.
func (c *controlRun) checkRedelivery(ctx context.Context) error {
	cmd := c.unknownRespond()
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	first, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return err
	}
	if err := c.redeliver(ctx, cmd, first); err != nil {
		return err
	}
	return c.barrier(ctx)
}

// redeliver resends cmd and requires its recorded ack again, byte-identical.
func (c *controlRun) redeliver(ctx context.Context, cmd *aep.Event, first wsMsg) error {
	n, err := c.w.sendCommand(ctx, cmd)
	if err != nil {
		return err
	}
	at := time.Now()
	again, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return fmt.Errorf("redelivery: %w", err)
	}
	if string(again.raw) != string(first.raw) {
		return fmt.Errorf("redelivery of %s: got ack %s, want the recorded ack byte-identical %s (AEP-0004 §3)", cmd.ID(), clip(again.raw), clip(first.raw))
	}
	return nil
}

// barrier sends a fresh command and waits for its ack: the target acks in
// order, so whatever it emitted for earlier commands precedes it.
func (c *controlRun) barrier(ctx context.Context) error {
	cmd := c.unknownRespond()
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	_, err = c.ack(ctx, n, at, cmd)
	return err
}

// causedBy lists the events (not frames) whose cause is one of ids.
func (c *controlRun) causedBy(ids ...string) []wsMsg {
	var out []wsMsg
	for _, m := range c.w.log.all() {
		if m.isEvent() && slices.Contains(ids, str(m.obj, "cause")) {
			out = append(out, m)
		}
	}
	return out
}

func (c *controlRun) checkForm(ctx context.Context) error {
	if c.ct.Form == nil {
		return skipf("ControlTarget.Form not set: no form to answer")
	}
	if c.form == nil {
		return fmt.Errorf("no pending controllable kind:\"form\" request with fields %v among the target's sessions", keys(c.ct.Form.Values))
	}
	req := c.form.event
	cmd := c.targetCommand(c.form.session, respondType, req.ID(), "", map[string]any{"answer": map[string]any{"values": c.ct.Form.Values}})
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	ack, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return err
	}
	if ack.typ != "control.accepted" {
		return fmt.Errorf("valid answer to %s: got %s, want control.accepted", req.ID(), clip(ack.raw))
	}
	ackID := str(ack.obj, "id")
	_, answered, err := c.w.next(ctx, n, func(m wsMsg) bool { return m.typ == "attention.answered" && str(m.obj, "subject") == req.ID() })
	if err != nil {
		return fmt.Errorf("no attention.answered with subject %s: %w", req.ID(), err)
	}
	var a aep.Answered
	if err := json.Unmarshal(answered.obj["data"], &a); err != nil {
		return fmt.Errorf("attention.answered data: %v: %s", err, clip(answered.raw))
	}
	if !jsonEqual(mustJSON(a.Answer.Values), mustJSON(c.ct.Form.Values)) && str(answered.obj, "capture") == "full" {
		return fmt.Errorf("attention.answered values at capture full: got %s, want the values sent %s", mustJSON(a.Answer.Values), mustJSON(c.ct.Form.Values))
	}
	if a.Via != aep.ViaControl {
		return fmt.Errorf("attention.answered via: got %q, want control", a.Via)
	}
	if cause := str(answered.obj, "cause"); cause != cmd.ID() && cause != ackID {
		return fmt.Errorf("attention.answered cause: got %q, want the command %s or its ack %s (AEP-0004 §6)", cause, cmd.ID(), ackID)
	}
	_, resolved, err := c.w.next(ctx, n, func(m wsMsg) bool { return m.typ == "attention.resolved" && str(m.obj, "subject") == req.ID() })
	if err != nil {
		return fmt.Errorf("no attention.resolved with subject %s: %w", req.ID(), err)
	}
	var rs aep.Resolved
	if json.Unmarshal(resolved.obj["data"], &rs) != nil || rs.Resolution != aep.ResolutionAnswered {
		return fmt.Errorf("attention.resolved: got %s, want resolution answered", clip(resolved.raw))
	}
	if cause := str(resolved.obj, "cause"); cause != cmd.ID() && cause != ackID && cause != str(answered.obj, "id") {
		return fmt.Errorf("attention.resolved cause: got %q, want the command, its ack or the answered event", cause)
	}
	return nil
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *controlRun) checkCancel(ctx context.Context) error {
	if !slices.Contains(c.accepts, "control.cancel") {
		return skipf("the target does not declare control.cancel (accepts %v)", c.accepts)
	}
	st, err := c.state(ctx, c.session)
	if err != nil {
		return err
	}
	if len(st.runs) == 0 {
		return fmt.Errorf("session %s has no running run to cancel", c.session)
	}
	run := st.runs[len(st.runs)-1]
	cmd := c.targetCommand(c.session, "control.cancel", "", run, map[string]any{"scope": "run", "reason": "conformance probe"})
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return err
	}
	ack, err := c.ack(ctx, n, at, cmd)
	if err != nil {
		return err
	}
	if ack.typ != "control.accepted" {
		return fmt.Errorf("control.cancel of running run %s: got %s, want control.accepted", run, clip(ack.raw))
	}
	ackID := str(ack.obj, "id")
	isCancel := func(m wsMsg) bool { return m.typ == "run.cancelled" && str(m.obj, "run") == run }
	_, rc, err := c.w.next(ctx, n, isCancel)
	if err != nil {
		return fmt.Errorf("no run.cancelled for run %s after control.accepted: %w", run, err)
	}
	if cause := str(rc.obj, "cause"); cause != cmd.ID() && cause != ackID {
		return fmt.Errorf("run.cancelled cause: got %q, want the command %s or its ack %s", cause, cmd.ID(), ackID)
	}
	// Redelivered: the recorded ack again, and still one run.cancelled.
	if err := c.redeliver(ctx, cmd, ack); err != nil {
		return err
	}
	if err := c.barrier(ctx); err != nil {
		return err
	}
	var cancels []string
	for _, m := range c.w.log.all() {
		if isCancel(m) {
			cancels = append(cancels, str(m.obj, "id"))
		}
	}
	if len(slices.Compact(cancels)) != 1 {
		return fmt.Errorf("run %s: got run.cancelled events %v, want exactly one (a redelivered cancel never re-executes)", run, cancels)
	}
	return nil
}

// checkOneDecision: after the last barrier, every command that reached the
// target has exactly one distinct ack, and every delivery of it is the same
// bytes.
func (c *controlRun) checkOneDecision(ctx context.Context) error {
	if err := c.barrier(ctx); err != nil {
		return err
	}
	var bad []string
	for _, cmd := range c.sent[:len(c.sent)-1] {
		distinct := map[string]bool{}
		for _, m := range c.w.log.all() {
			if isAck(m) && str(m.obj, "cause") == cmd.ID() {
				distinct[string(m.raw)] = true
			}
		}
		if len(distinct) != 1 {
			bad = append(bad, fmt.Sprintf("%s %s: %d distinct acks", cmd.Type(), cmd.ID(), len(distinct)))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("want exactly one ack decision per command: %s", strings.Join(bad, "; "))
	}
	return passf("%d commands, one ack each", len(c.sent)-1)
}
