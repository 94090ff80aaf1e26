package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/aepforms/aepforms/internal/aep"
)

func downlevelChecks() []check {
	return []check{
		{"capture.ceiling-replay", checkCeilingReplay},
		{"capture.ceiling-live-sse", checkCeilingLiveSSE},
		{"capture.ceiling-ws", checkCeilingWS},
		{"capture.ceiling-routed-command", checkCeilingCommand},
	}
}

// dlCase is one case of fixtures/downlevel/cases.json.
type dlCase struct {
	Name          string                     `json:"name"`
	Ceiling       string                     `json:"ceiling"`
	Event         map[string]json.RawMessage `json:"event"`
	ExpectCapture string                     `json:"expect_capture"`
	ExpectData    json.RawMessage            `json:"expect_data"`
}

func (r *runner) downlevelCases() ([]dlCase, error) {
	if r.t.Downlevel == nil {
		return nil, skipf("Target.Downlevel not set: no fixture expectations to compare with")
	}
	var f struct {
		Cases []dlCase `json:"cases"`
	}
	if err := json.Unmarshal(r.t.Downlevel, &f); err != nil || len(f.Cases) == 0 {
		return nil, fmt.Errorf("Target.Downlevel is not the downlevel corpus: %v", err)
	}
	return f.Cases, nil
}

// instance rewrites the case's event into a fresh session with a fresh id
// (members otherwise as in the fixture) and returns it with the event the
// ceiling must deliver.
func (r *runner) instance(c dlCase) (*aep.Event, map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	for k, v := range c.Event {
		m[k] = v
	}
	m["session"] = mustJSON(r.uniq("dl"))
	m["id"] = mustJSON(r.uniq(str(c.Event, "id")))
	e, err := aep.Decode(mustJSON(m))
	if err != nil {
		return nil, nil, err
	}
	want := map[string]json.RawMessage{}
	for k, v := range m {
		want[k] = v
	}
	want["capture"] = mustJSON(c.ExpectCapture)
	delete(want, "data")
	if len(c.ExpectData) > 0 && string(c.ExpectData) != "null" {
		want["data"] = c.ExpectData
	}
	return e, want, nil
}

// compareDownlevel checks a delivered event against the expected one: the
// same members, capture and data as the fixture says; an event the ceiling
// does not lower passes byte-identical.
func compareDownlevel(c dlCase, in *aep.Event, got []byte, want map[string]json.RawMessage) error {
	if !jsonEqual(got, mustJSON(want)) {
		return fmt.Errorf("%s (ceiling %s): got %s, want %s", c.Name, c.Ceiling, clip(got), clip(mustJSON(want)))
	}
	if jsonEqual(in.Raw(), mustJSON(want)) && string(got) != string(in.Raw()) {
		return fmt.Errorf("%s (ceiling %s): an event the ceiling does not lower must pass untouched: got %s, want %s", c.Name, c.Ceiling, clip(got), clip(in.Raw()))
	}
	return nil
}

// storable reports whether the case's event can be posted: commands are
// routed, not posted (capture.ceiling-routed-command covers them).
func storable(c dlCase) bool { return !aep.IsCommand(str(c.Event, "type")) }

func checkCeilingReplay(ctx context.Context, r *runner) error {
	cases, err := r.downlevelCases()
	if err != nil {
		return err
	}
	n := 0
	for _, c := range cases {
		if !storable(c) {
			continue
		}
		in, want, err := r.instance(c)
		if err != nil {
			return err
		}
		if err := r.post(ctx, in); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		items, err := r.history(ctx, filterSession(in.Session()), url.Values{"capture": {c.Ceiling}})
		if err != nil {
			return err
		}
		msgs := events(items)
		if len(msgs) != 1 {
			return fmt.Errorf("%s: replay at ceiling %s got %d events, want 1", c.Name, c.Ceiling, len(msgs))
		}
		if err := compareDownlevel(c, in, []byte(msgs[0].data), want); err != nil {
			return err
		}
		// Without a ceiling the event is delivered as stored.
		if err := r.wantHistory(ctx, in.Session(), in.Raw()); err != nil {
			return fmt.Errorf("%s without a ceiling: %w", c.Name, err)
		}
		n++
	}
	return passf("%d fixture cases", n)
}

// firstCase returns the first storable case whose event type is typ.
func firstCase(cases []dlCase, typ string) (dlCase, bool) {
	for _, c := range cases {
		if str(c.Event, "type") == typ && storable(c) {
			return c, true
		}
	}
	return dlCase{}, false
}

func checkCeilingLiveSSE(ctx context.Context, r *runner) error {
	cases, err := r.downlevelCases()
	if err != nil {
		return err
	}
	c, ok := firstCase(cases, "attention.requested")
	if !ok {
		return skipf("no attention.requested case in the corpus")
	}
	in, want, err := r.instance(c)
	if err != nil {
		return err
	}
	s, err := r.liveStream(ctx, url.Values{"filter": {filterSession(in.Session())}, "capture": {c.Ceiling}})
	if err != nil {
		return err
	}
	defer s.close()
	if err := r.post(ctx, in); err != nil {
		return err
	}
	_, it, err := waitEventID(ctx, s, 0, in.ID())
	if err != nil {
		return err
	}
	return compareDownlevel(c, in, []byte(it.data), want)
}

func checkCeilingWS(ctx context.Context, r *runner) error {
	cases, err := r.downlevelCases()
	if err != nil {
		return err
	}
	w, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	n := 0
	for i, c := range cases {
		if !storable(c) {
			continue
		}
		in, want, err := r.instance(c)
		if err != nil {
			return err
		}
		if _, err := w.subscribe(ctx, map[string]any{"id": "dl" + itoa(i), "filter": map[string]any{"session": in.Session()}, "capture": c.Ceiling}); err != nil {
			return err
		}
		if err := r.post(ctx, in); err != nil {
			return err
		}
		_, m, err := w.next(ctx, 0, eventID(in.ID()))
		if err != nil {
			return fmt.Errorf("%s: never delivered on the socket: %w", c.Name, err)
		}
		if err := compareDownlevel(c, in, m.raw, want); err != nil {
			return fmt.Errorf("WS subscribe capture: %w", err)
		}
		n++
	}
	return passf("%d fixture cases", n)
}

// checkCeilingCommand: a routed command reaches its target byte-identical,
// while an observer under a ceiling sees the down-levelled copy (DL2).
func checkCeilingCommand(ctx context.Context, r *runner) error {
	cases, err := r.downlevelCases()
	if err != nil {
		return err
	}
	if err := r.needControl(); err != nil {
		return err
	}
	var c dlCase
	for _, x := range cases {
		if !storable(x) {
			c = x
		}
	}
	if c.Name == "" {
		return skipf("no command case in the corpus")
	}
	e, err := r.openEmitter(ctx, "dltarget", "emitter", defaultControl())
	if err != nil {
		return err
	}
	defer e.close()
	in, want, err := r.instance(c)
	if err != nil {
		return err
	}
	if _, err := e.claim(ctx, r, in.Session()); err != nil {
		return err
	}
	obs, err := r.liveStream(ctx, url.Values{"filter": {filterSession(in.Session())}, "capture": {c.Ceiling}})
	if err != nil {
		return err
	}
	defer obs.close()
	sender, err := r.openConsumer(ctx)
	if err != nil {
		return err
	}
	defer sender.close()
	if _, err := sender.sendCommand(ctx, in); err != nil {
		return err
	}
	if err := routedTo(ctx, e, 0, in); err != nil {
		return err
	}
	_, it, err := waitEventID(ctx, obs, 0, in.ID())
	if err != nil {
		return fmt.Errorf("%s: the routed command never reached the observer: %w", c.Name, err)
	}
	return compareDownlevel(c, in, []byte(it.data), want)
}
