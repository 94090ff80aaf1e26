package conformance

import (
	"context"
	"fmt"
	"strings"
)

func controlChecks() []check {
	return []check{
		{"control.routed-byte-identical", checkControlRouted},
		{"control.retry-forwarded", checkControlRetry},
		{"control.no-route", checkControlNoRoute},
		{"control.ambiguous", checkControlAmbiguous},
		{"control.unauthorized-watch-only", checkControlWatchOnly},
		{"control.seqless-not-owner", checkControlSeqless},
		{"control.any-role-sends", checkControlRoles},
		{"control.unsupported-behalf", checkControlUnsupported},
	}
}

// needControl skips a routing check in the watch-only posture.
func (r *runner) needControl() error {
	if !r.t.authenticated() {
		return skipf("open watch-only posture: every command is refused unauthorized (control.unauthorized-watch-only checks that)")
	}
	return nil
}

func checkControlRouted(ctx context.Context, r *runner) error {
	e, s, c, err := r.controlPair(ctx, "owner")
	if err != nil {
		return err
	}
	defer e.close()
	defer c.close()
	// json.Marshal escapes the subject's < and > as \u003c and \u003e: a relay
	// that re-encodes instead of forwarding would change them.
	cmd := r.command(s, respondType, "req-<1>&", nil)
	if _, err := c.sendCommand(ctx, cmd); err != nil {
		return err
	}
	if err := routedTo(ctx, e, 0, cmd); err != nil {
		return err
	}
	if err := noErrorFor(ctx, c, cmd); err != nil {
		return err
	}
	// A routed command is kept in the target session's history.
	items, err := r.history(ctx, filterSession(s), nil)
	if err != nil {
		return err
	}
	for _, it := range events(items) {
		if strings.Contains(it.data, cmd.ID()) {
			if it.data != string(cmd.Raw()) {
				return fmt.Errorf("routed command in history: got %s, want byte-identical %s", clip([]byte(it.data)), clip(cmd.Raw()))
			}
			return nil
		}
	}
	return fmt.Errorf("routed command %s not in session %s's replay (SHOULD persist, AEP-0004 §4.4; the relay keeps routed commands)", cmd.ID(), s)
}

func checkControlRetry(ctx context.Context, r *runner) error {
	e, s, c, err := r.controlPair(ctx, "retry")
	if err != nil {
		return err
	}
	defer e.close()
	defer c.close()
	cmd := r.command(s, respondType, "req-retry", nil)
	for i := 1; i <= 3; i++ {
		if _, err := c.sendCommand(ctx, cmd); err != nil {
			return err
		}
		if err := e.log.waitN(ctx, eventID(cmd.ID()), i); err != nil {
			return fmt.Errorf("transmission %d of the same command (same id): got %d at the target, want %d (every transmission is forwarded; the target dedupes): %w", i, e.received(cmd.ID()), i, err)
		}
	}
	return noErrorFor(ctx, c, cmd)
}

func checkControlNoRoute(ctx context.Context, r *runner) error {
	c, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	s := r.uniq("noroute")
	// History exists (an HTTP post), but HTTP never makes an owner.
	if err := r.post(ctx, r.build(ev{session: s, seq: 0})); err != nil {
		return err
	}
	cmd := r.command(s, respondType, "req-none", nil)
	n, err := c.sendCommand(ctx, cmd)
	if err != nil {
		return err
	}
	code := "no-route"
	if !r.t.authenticated() {
		code = "unauthorized" // watch-only refuses before routing
	}
	if err := refused(ctx, c, n, cmd, code); err != nil {
		return err
	}
	return r.notStored(ctx, cmd)
}

func checkControlAmbiguous(ctx context.Context, r *runner) error {
	if err := r.needControl(); err != nil {
		return err
	}
	e1, t1, err := r.ownedSession(ctx, "claimA")
	if err != nil {
		return err
	}
	defer e1.close()
	e2, t2, err := r.ownedSession(ctx, "claimB")
	if err != nil {
		return err
	}
	defer e2.close()
	s := r.uniq("contested")
	for _, e := range []*emitter{e1, e2} {
		if _, err := e.claim(ctx, r, s); err != nil {
			return err
		}
	}
	c, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	cmd := r.command(s, respondType, "req-amb", nil)
	n, err := c.sendCommand(ctx, cmd)
	if err != nil {
		return err
	}
	if err := refused(ctx, c, n, cmd, "ambiguous"); err != nil {
		return err
	}
	// Barrier: a later command to each emitter's own session reaches it,
	// so the refused one would have arrived first had it been delivered.
	for _, p := range []struct {
		e *emitter
		s string
	}{{e1, t1}, {e2, t2}} {
		b := r.command(p.s, respondType, "req-barrier", nil)
		if _, err := c.sendCommand(ctx, b); err != nil {
			return err
		}
		if err := routedTo(ctx, p.e, 0, b); err != nil {
			return err
		}
		if got := p.e.received(cmd.ID()); got != 0 {
			return fmt.Errorf("ambiguous command reached claimant %s (%d times), want no one (never guess, never broadcast)", p.e.agent, got)
		}
	}
	if err := r.notStored(ctx, cmd); err != nil {
		return err
	}
	if r.rosterAdvertised(ctx) == nil {
		m, err := askRoster(ctx, c, "r-amb")
		if err != nil {
			return err
		}
		if got, err := rosterEntries(m, s); err != nil || len(got) != 2 {
			return fmt.Errorf("roster with two claimants of %s: got %d entries (%v), want 2 (ambiguity visible, never merged)", s, len(got), err)
		}
	}
	return nil
}

func checkControlWatchOnly(ctx context.Context, r *runner) error {
	if r.t.authenticated() {
		return skipf("token configured: an unauthenticated binding is refused at the handshake (401, auth.token-required), so no command can arrive on one")
	}
	e, s, err := r.ownedSession(ctx, "watched")
	if err != nil {
		return err
	}
	defer e.close()
	c, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	for _, typ := range []string{respondType, "control.cancel"} {
		data := any(nil)
		if typ == "control.cancel" {
			data = map[string]any{"scope": "run"}
		}
		cmd := r.command(s, typ, "req-watch", data)
		n, err := c.sendCommand(ctx, cmd)
		if err != nil {
			return err
		}
		if err := refused(ctx, c, n, cmd, "unauthorized"); err != nil {
			return err
		}
		if _, err := e.ping(ctx); err != nil {
			return err
		}
		if got := e.received(cmd.ID()); got != 0 {
			return fmt.Errorf("watch-only relay delivered %s to the owner (%d times), want it refused toward the sender only", typ, got)
		}
		if err := r.notStored(ctx, cmd); err != nil {
			return err
		}
	}
	return nil
}

// checkControlSeqless: seq-less events (a command, attention.routed) and
// HTTP posts never make their sender an owner, so a later command still
// has exactly one route.
func checkControlSeqless(ctx context.Context, r *runner) error {
	e, s, c, err := r.controlPair(ctx, "seqowner")
	if err != nil {
		return err
	}
	defer e.close()
	defer c.close()
	first := r.command(s, respondType, "req-a", nil)
	routed := r.build(ev{agent: r.prefix + "-sink", session: s, seq: -1, typ: "attention.routed", subject: "req-a", data: map[string]any{"to": "ops", "via": "chat"}})
	for _, b := range [][]byte{first.Raw(), routed.Raw()} {
		if err := c.send(ctx, b); err != nil {
			return err
		}
	}
	if err := routedTo(ctx, e, 0, first); err != nil {
		return err
	}
	if err := r.post(ctx, r.build(ev{agent: r.prefix + "-poster", session: s, seq: 7})); err != nil {
		return err
	}
	if _, err := c.ping(ctx); err != nil {
		return err
	}
	second := r.command(s, respondType, "req-b", nil)
	n, err := c.sendCommand(ctx, second)
	if err != nil {
		return err
	}
	if err := routedTo(ctx, e, 0, second); err != nil {
		return fmt.Errorf("after seq-less events from the sender: %w", err)
	}
	if err := noErrorFor(ctx, c, second); err != nil {
		return fmt.Errorf("the sender of seq-less events became an owner: %w", err)
	}
	for _, m := range c.log.all()[n:] {
		if m.isEvent() && str(m.obj, "id") == second.ID() {
			return fmt.Errorf("the command was delivered back to its sender: it became an owner by sending seq-less events")
		}
	}
	return nil
}

func checkControlRoles(ctx context.Context, r *runner) error {
	if err := r.needControl(); err != nil {
		return err
	}
	e, s, err := r.ownedSession(ctx, "roletarget")
	if err != nil {
		return err
	}
	defer e.close()
	for _, role := range []string{"consumer", "emitter", "both"} {
		w, _, err := r.dial(ctx, dialOpts{})
		if err != nil {
			return err
		}
		h := consumerHello(r.prefix + "-" + role + "-sender")
		h["role"] = role
		_, err = w.hello(ctx, h)
		if err == nil {
			cmd := r.command(s, respondType, "req-"+role, nil)
			if _, err = w.sendCommand(ctx, cmd); err == nil {
				if err = routedTo(ctx, e, 0, cmd); err == nil {
					err = noErrorFor(ctx, w, cmd)
				}
			}
			if err != nil {
				err = fmt.Errorf("command from a %s-role connection: %w", role, err)
			}
		}
		w.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkControlUnsupported: a command outside the target's declared accepts
// is nacked unsupported, by the target or on its behalf by the relay; the
// relay either forwards it or refuses it, never both.
func checkControlUnsupported(ctx context.Context, r *runner) error {
	e, s, c, err := r.controlPair(ctx, "accepts")
	if err != nil {
		return err
	}
	defer e.close()
	defer c.close()
	cmd := r.command(s, "control.pause", "", map[string]any{})
	n, err := c.sendCommand(ctx, cmd)
	if err != nil {
		return err
	}
	// Barrier on both sides: a routed respond after it reaches the target.
	b := r.command(s, respondType, "req-after", nil)
	if _, err := c.sendCommand(ctx, b); err != nil {
		return err
	}
	if err := routedTo(ctx, e, 0, b); err != nil {
		return err
	}
	if _, err := c.ping(ctx); err != nil {
		return err
	}
	fwd := e.received(cmd.ID())
	var refusal *wsMsg
	for _, m := range c.log.all()[n:] {
		if errorFor(cmd.ID())(m) {
			refusal = &m
			break
		}
	}
	switch {
	case fwd > 0 && refusal != nil:
		return fmt.Errorf("control.pause outside accepts: both forwarded and refused (%s), want one", clip(refusal.raw))
	case refusal != nil:
		if str(refusal.obj, "code") != "unsupported" {
			return fmt.Errorf("control.pause outside accepts refused: got %s, want code unsupported", clip(refusal.raw))
		}
		if err := r.notStored(ctx, cmd); err != nil {
			return err
		}
		return passf("refused on the target's behalf: %s", clip(refusal.raw))
	case fwd == 1:
		return passf("forwarded to the target, which must nack it unsupported")
	}
	return fmt.Errorf("control.pause: delivered %d times and not refused, want it forwarded once or refused unsupported", fwd)
}
