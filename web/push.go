package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/sse"
)

// handlePush streams rendered card fragments to one browser (see
// docs/DESIGN.md, "Browser push protocol"). Each message's id is the inbox
// change seq, so a reconnecting EventSource resumes with Last-Event-ID; the
// page passes the seq it was rendered at as ?since= on its first connect.
// A browser too far behind gets `reload`; one that reads too slowly is
// dropped and catches up when it reconnects.
func handlePush(s *server, in Inbox) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := queryOf(r)
		var since uint64
		hasSince := false
		for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("since")} {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				since, hasSince = n, true
				break
			}
		}
		// Subscribe before reading history so nothing falls in between.
		sub := in.Subscribe(s.cfg.PushBuffer)
		defer sub.Close()
		sw, err := sse.NewWriter(w, s.cfg.WriteTimeout)
		if err != nil {
			s.cfg.Logger.Error("web: push needs a flushing response writer", "err", err)
			http.Error(w, "Live updates are not available.", http.StatusInternalServerError)
			return
		}
		s.deps.Metrics.Browsers.Add(1)
		defer s.deps.Metrics.Browsers.Add(-1)

		p := &pusher{s: s, in: in, w: sw, r: r, q: q, last: since}
		if hasSince {
			changes, ok := in.Since(since)
			if !ok {
				_ = sw.Event(sse.Message{Event: "reload", Data: "too far behind"})
				return
			}
			for _, c := range changes {
				if p.send(c) != nil {
					return
				}
			}
		}
		if err := p.status(); err != nil {
			return
		}
		tick := time.NewTicker(s.cfg.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if sw.Comment("ping") != nil {
					return
				}
			case c, ok := <-sub.C():
				if !ok {
					s.deps.Metrics.PushDrops.Add(1)
					return
				}
				if p.send(c) != nil {
					return
				}
			}
		}
	}
}

// pusher writes inbox changes to one browser.
type pusher struct {
	s    *server
	in   Inbox
	w    *sse.Writer
	r    *http.Request
	q    inbox.Query
	last uint64
}

func (p *pusher) send(c inbox.Change) error {
	if c.Seq <= p.last {
		return nil
	}
	p.last = c.Seq
	id := strconv.FormatUint(c.Seq, 10)
	if c.Kind == inbox.ChangeStatus {
		return p.statusWithID(id)
	}
	card, ok := p.in.Card(c.Card)
	if !ok || !p.q.Match(card) {
		return p.w.Event(sse.Message{ID: id, Event: "remove", Data: domID(c.Card)})
	}
	html, err := p.s.renderCardFragment(p.r, card, nil, nil)
	if err != nil {
		return err
	}
	if err := p.w.Event(sse.Message{ID: id, Event: "card", Data: html}); err != nil {
		return err
	}
	return p.statusWithID("")
}

func (p *pusher) status() error { return p.statusWithID("") }

func (p *pusher) statusWithID(id string) error {
	html, err := p.s.renderStatusFragment(p.r, p.q)
	if err != nil {
		return err
	}
	return p.w.Event(sse.Message{ID: id, Event: "status", Data: html})
}
