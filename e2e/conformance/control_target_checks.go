package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

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

// sendAcked sends cmd and waits for its ack (see ack); n is where the
// ack's search began, for what the test waits for after it.
func (c *controlRun) sendAcked(ctx context.Context, cmd *aep.Event) (n int, ack wsMsg, err error) {
	n, at, err := c.send(ctx, cmd)
	if err != nil {
		return n, wsMsg{}, err
	}
	ack, err = c.ack(ctx, n, at, cmd)
	return n, ack, err
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
	m, err := c.ack(ctx, n, at, cmd) // timed from the send: the pass says how long
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
	_, m, err := c.sendAcked(ctx, cmd)
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
	_, first, err := c.sendAcked(ctx, cmd)
	if err != nil {
		return err
	}
	if err := c.redeliver(ctx, cmd, first); err != nil {
		return err
	}
	if err := c.barrier(ctx); err != nil {
		return err
	}
	// A respond to a request never asked has no side effects: the only
	// events caused by it are the two deliveries of its one ack.
	if got := c.causedBy(cmd.ID(), str(first.obj, "id")); len(got) != 2 || string(got[1].raw) != string(first.raw) {
		return fmt.Errorf("events caused by %s or its ack: got %v, want only its ack twice", cmd.ID(), types(got))
	}
	return nil
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
	_, _, err := c.sendAcked(ctx, cmd)
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
	n, ack, err := c.sendAcked(ctx, cmd)
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
	n, ack, err := c.sendAcked(ctx, cmd)
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
