package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/coder/websocket"
)

// DrainChecks lists the names of the checks RunDrain performs.
func DrainChecks() []string { return []string{"drain.ws-closing", "drain.sse-shutting-down"} }

// RunDrain checks an endpoint's orderly shutdown (AEP-0003 §3.5.4 and the
// reference drain): it opens a WebSocket subscription that has delivered an
// event and an SSE stream, calls stop (which must begin the endpoint's
// shutdown), and requires a closing frame with the delivered position then
// close 1001 on the socket, and a `: shutting-down` comment then the end
// of the SSE response.
func RunDrain(ctx context.Context, t Target, stop func()) Report {
	r := newRunner(t)
	var ws *wsConn
	var s *sseStream
	var sess string
	// The streams live on ctx itself: they must outlast the setup.
	streams := ctx
	setup := r.run(ctx, check{name: "drain.setup", fn: func(ctx context.Context, r *runner) error {
		var err error
		sess = r.uniq("drain")
		if ws, err = r.openConsumer(ctx); err != nil {
			return err
		}
		if _, err := ws.subscribe(ctx, map[string]any{"id": "d", "filter": map[string]any{"session": sess}}); err != nil {
			return err
		}
		if s, err = r.liveStream(streams, url.Values{"filter": {filterSession(sess)}}); err != nil {
			return err
		}
		e := r.build(ev{session: sess, seq: 3})
		if err := r.post(ctx, e); err != nil {
			return err
		}
		if _, _, err := ws.next(ctx, 0, eventID(e.ID())); err != nil {
			return err
		}
		_, _, err = waitEventID(ctx, s, 0, e.ID())
		return err
	}})
	defer func() {
		if ws != nil {
			ws.close()
		}
		if s != nil {
			s.close()
		}
	}()
	if setup.Status != Pass {
		var rep Report
		for _, n := range DrainChecks() {
			rep.Results = append(rep.Results, Result{Name: n, Status: Fail, Reason: "setup: " + setup.Reason})
		}
		return rep
	}
	stop()
	return Report{Results: []Result{
		r.run(ctx, check{name: "drain.ws-closing", fn: func(ctx context.Context, _ *runner) error {
			_, m, err := ws.next(ctx, 0, frame("closing", "", ""))
			if err != nil {
				return fmt.Errorf("no closing frame before the close: %w", err)
			}
			var c struct {
				Reason    *string `json:"reason"`
				Delivered []pos   `json:"delivered"`
			}
			var raw struct {
				Delivered []map[string]json.RawMessage `json:"delivered"`
			}
			if json.Unmarshal(m.raw, &c) != nil || json.Unmarshal(m.raw, &raw) != nil || c.Reason == nil {
				return fmt.Errorf("closing frame got %s, want {type:closing, reason, delivered:[...]}", clip(m.raw))
			}
			found := false
			for i, d := range c.Delivered {
				if d.Session == sess && d.Seq == 3 && d.Epoch == 0 && str(raw.Delivered[i], "sub") == "d" {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("closing frame got %s, want delivered to hold {sub:d, session:%s, epoch:0, seq:3}", clip(m.raw), sess)
			}
			st, err := ws.waitClosed(ctx)
			if err != nil {
				return err
			}
			if st != websocket.StatusGoingAway {
				return fmt.Errorf("close status after closing: got %d, want 1001 (going away)", st)
			}
			return nil
		}}),
		r.run(ctx, check{name: "drain.sse-shutting-down", fn: func(ctx context.Context, _ *runner) error {
			items, err := s.log.waitEnd(ctx)
			if err != nil && ctx.Err() != nil {
				return fmt.Errorf("the SSE response did not end on shutdown: %w", err)
			}
			if len(items) == 0 || !items[len(items)-1].isComment || items[len(items)-1].comment != "shutting-down" {
				return fmt.Errorf("SSE at shutdown: got comments %v after %d items (end: %v), want a `: shutting-down` comment then the end", commentsOf(items), len(items), err)
			}
			return nil
		}}),
	}}
}
