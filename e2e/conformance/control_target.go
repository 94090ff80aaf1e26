package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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
	for _, c := range (&controlRun{}).checks() {
		out = append(out, c.name)
	}
	return out
}

// targetCheck is one named control-target check.
type targetCheck struct {
	name string
	fn   func(ctx context.Context) error
}

func (c *controlRun) checks() []targetCheck {
	return []targetCheck{
		{"target.declared", c.checkDeclared},
		{"target.ack-within-window", c.checkAck},
		{"target.unsupported-nack", c.checkUnsupported},
		{"target.redelivery-reack", c.checkRedelivery},
		{"target.form-answer", c.checkForm},
		{"target.cancel", c.checkCancel},
		{"target.one-decision-per-command", c.checkOneDecision},
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
	for _, tc := range c.checks() {
		rep.Results = append(rep.Results, c.run(ctx, check{name: tc.name, fn: func(ctx context.Context, _ *runner) error {
			if c.setup != nil && tc.name != "target.declared" {
				return fmt.Errorf("no target to check: %v", c.setup)
			}
			return tc.fn(ctx)
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
