package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// handleUndo takes "Undo" on answers whose commands this UI holds for
// the undo window (--undo-window): each form value form.NameUndo is
// "{card} {command}", one per answer (a batch's Undo names all of its).
// Taken back, nothing is sent and each card takes an answer again with
// the operator's choice in its form: 303 to the page at the first card
// (the script's fetch: 204, the push brings the cards). One that could
// not be taken back (it left, or another instance of aepforms holds it)
// is 409 with the page, that card's error summary saying so.
func handleUndo(svc *answer.Service, pg *pages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		panel := cameFromPanel(r, pg.base)
		if _, ok := readPost(w, r, pg.site, panel); !ok {
			return
		}
		var held []answer.Held
		by := operatorFrom(r.Context())
		for _, v := range r.PostForm[form.NameUndo] {
			card, cmd, ok := strings.Cut(v, " ")
			if ok && card != "" && cmd != "" {
				held = append(held, answer.Held{Card: inbox.CardID(card), Command: cmd, By: by})
			}
		}
		batches := r.PostForm[form.NameUndoBatch]
		for _, b := range batches {
			held = append(held, svc.HeldOf(b, by)...)
		}
		switch {
		case len(held) == 0 && len(batches) > 0:
			// The batch's answers have all left (or were taken back).
			undoRefused(w, r, pg, panel, "", view.UndoWords(true))
			return
		case len(held) == 0:
			http.Error(w, "The request names no answer to undo. Reload the page.", http.StatusBadRequest)
			return
		}
		sent := sentAt(pg, held)
		for i, err := range svc.Undo(held) {
			if err == nil || errors.Is(err, inbox.ErrNotRecorded) {
				// Taken back: so is the rule made with it.
				pg.rules.dropMadeWith(r.Context(), held[i], sent[i])
			}
			if err == nil {
				continue
			}
			pg.log.Info("web: answer not taken back", "card", string(held[i].Card), "command", held[i].Command, "err", err)
			undoRefused(w, r, pg, panel, held[i].Card, view.UndoWords(errors.Is(err, answer.ErrNotHeld)))
			return
		}
		if wantsFragment(r) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		pg.redirectBack(w, r, held[0].Card, panel)
	}
}

// undoRefused answers an Undo that took card's answer (none: a batch's)
// not back, msg saying why: 409 with the page, the card's error summary
// (or the page's banner) saying so; to the page script, msg alone.
func undoRefused(w http.ResponseWriter, r *http.Request, pg *pages, panel bool, card inbox.CardID, msg string) {
	if wantsFragment(r) {
		http.Error(w, msg, http.StatusConflict)
		return
	}
	pg.page(w, r, http.StatusConflict, panel, &view.Refused{Card: card,
		Problems: []aep.Problem{{Code: "not-undone", Message: msg}}})
}

// undoBar is the page's undo bar (view.UndoBar): the answers whose
// commands are held for the undo window among heads, those the signed-in
// operator sent (all of them without sign-in: view.Card decides).
func (p *pages) undoBar(r *http.Request, heads []inbox.Card, opts view.PageOptions) []view.UndoView {
	var cards []view.CardView
	for _, h := range heads {
		if !h.Verdict(opts.Now, opts.Viewer).Undo {
			continue
		}
		c, ok := p.in.Card(h.ID)
		if !ok {
			continue
		}
		cards = append(cards, view.Card(c, view.Options{BasePath: opts.BasePath, Now: opts.Now, Viewer: opts.Viewer, Operator: opts.Operator}))
	}
	// Unfiltered, the bar holds every held answer of each batch: its Undo
	// of all may name them by batch.
	return view.UndoBar(cards, strings.TrimSuffix(opts.BasePath, "/"), opts.Filter == inbox.Query{})
}

// sentAt is when each held answer was posted (zero when its card no
// longer has it): a rule made with it was made then or after.
func sentAt(pg *pages, held []answer.Held) []time.Time {
	out := make([]time.Time, len(held))
	for i, h := range held {
		c, ok := pg.in.Card(h.Card)
		if !ok {
			continue
		}
		if sub := c.Verdict(pg.now(), inbox.Viewer{}).Submission; sub != nil && sub.CommandID == h.Command {
			out[i] = sub.At
		}
	}
	return out
}

// dropMadeWith deletes the rules h's operator made with h's answer
// ("Answer like this from now on…" on its card, at or after since):
// an answer taken back takes its rule with it, or the rule would go on
// answering what the operator just took back. Journaled as deleted by
// them; a rule that cannot be deleted is logged.
func (p *rulePages) dropMadeWith(ctx context.Context, h answer.Held, since time.Time) {
	if p.rules == nil || since.IsZero() {
		return
	}
	st := p.rules.Store()
	list, err := st.Rules(ctx)
	if err != nil {
		p.log.Error("web: the rules made with an undone answer could not be read", "card", string(h.Card), "err", err)
		return
	}
	for _, r := range list {
		if r.Card != string(h.Card) || r.Maker != h.By || r.State != store.RuleActive || r.Created.Before(since) {
			continue
		}
		if _, err := st.DeleteRule(ctx, r.ID, h.By, p.now()); err != nil {
			p.log.Error("web: a rule made with an undone answer could not be deleted", "rule", r.ID, "err", err)
			continue
		}
		p.log.Info("rule deleted with its undone answer", "rule", r.ID, "operator", h.By)
	}
}
