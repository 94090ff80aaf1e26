package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// askRoster sends a roster request on w and returns the reply (or error
// frame) naming id.
func askRoster(ctx context.Context, w *wsConn, id string) (wsMsg, error) {
	if err := w.send(ctx, map[string]any{"type": "roster", "id": id}); err != nil {
		return wsMsg{}, err
	}
	_, m, err := w.next(ctx, 0, func(m wsMsg) bool { return (m.typ == "roster" || m.typ == "error") && str(m.obj, "id") == id })
	if err != nil {
		return m, fmt.Errorf("roster %s: no reply echoing the id: %w", id, err)
	}
	return m, nil
}

// rosterEntry is one roster entry.
type rosterEntry struct {
	Session  string          `json:"session"`
	Agent    string          `json:"agent"`
	Instance string          `json:"instance"`
	Control  json.RawMessage `json:"control"`
	Emits    []string        `json:"emits"`
}

func rosterEntries(m wsMsg, session string) ([]rosterEntry, error) {
	var body struct {
		Entries []rosterEntry `json:"entries"`
	}
	if err := json.Unmarshal(m.raw, &body); err != nil || m.typ != "roster" {
		return nil, fmt.Errorf("roster reply got %s, want {type:roster, id, entries:[...]}", clip(m.raw))
	}
	var out []rosterEntry
	for _, e := range body.Entries {
		if e.Session == session {
			out = append(out, e)
		}
	}
	return out, nil
}

func checkWSRoster(ctx context.Context, r *runner) error {
	if err := r.rosterAdvertised(ctx); err != nil {
		return err
	}
	control := map[string]any{"accepts": []string{respondType}, "ack_window_ms": 4321, "x_note": "kept verbatim"}
	e1, err := r.openEmitter(ctx, "roster1", "emitter", control)
	if err != nil {
		return err
	}
	defer e1.close()
	e2, err := r.openEmitter(ctx, "roster2", "both", nil)
	if err != nil {
		return err
	}
	defer e2.close()
	s1, s2 := r.uniq("roster1"), r.uniq("roster2")
	if _, err := e1.claim(ctx, r, s1); err != nil {
		return err
	}
	if _, err := e2.claim(ctx, r, s2); err != nil {
		return err
	}
	c, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	m, err := askRoster(ctx, c, "r-1")
	if err != nil {
		return err
	}
	got1, err := rosterEntries(m, s1)
	if err != nil {
		return err
	}
	if len(got1) != 1 {
		return fmt.Errorf("roster: got %d entries for session %s, want 1 (one live claim): %s", len(got1), s1, clip(m.raw))
	}
	en := got1[0]
	if en.Agent != e1.agent || en.Instance != e1.instance {
		return fmt.Errorf("roster entry for %s: got agent %q instance %q, want the hello's %q %q", s1, en.Agent, en.Instance, e1.agent, e1.instance)
	}
	if !jsonEqual(en.Control, mustJSON(control)) {
		return fmt.Errorf("roster entry control: got %s, want the declared block verbatim %s", en.Control, mustJSON(control))
	}
	if !slices.Equal(en.Emits, []string{"progress", "session"}) {
		return fmt.Errorf("roster entry emits: got %v, want the declared [progress session]", en.Emits)
	}
	got2, err := rosterEntries(m, s2)
	if err != nil {
		return err
	}
	if len(got2) != 1 || got2[0].Agent != e2.agent || len(got2[0].Control) != 0 {
		return fmt.Errorf("roster entry for %s (a claimant that declared no control): got %s, want one entry, agent %q, no control member", s2, mustJSON(got2), e2.agent)
	}
	return nil
}

func checkWSRosterEmitter(ctx context.Context, r *runner) error {
	if err := r.rosterAdvertised(ctx); err != nil {
		return err
	}
	e, err := r.openEmitter(ctx, "rosterask", "emitter", nil)
	if err != nil {
		return err
	}
	defer e.close()
	m, err := askRoster(ctx, e.wsConn, "r-em")
	if err != nil {
		return err
	}
	if m.typ != "error" || str(m.obj, "code") != "unauthorized" {
		return fmt.Errorf("roster asked on an emitter-role connection: got %s, want error {code:unauthorized, id:r-em}", clip(m.raw))
	}
	if _, err := e.claim(ctx, r, r.uniq("rosterask")); err != nil {
		return fmt.Errorf("after the in-band refusal the connection must survive: %w", err)
	}
	return nil
}
