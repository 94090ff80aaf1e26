package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
)

// History reads the answer journal: one page of the answers sent, newest
// first (store.PageSize a page; HistoryPage.Next is the next page's
// cursor, stable under inserts).
type History interface {
	History(ctx context.Context, q store.HistoryQuery) (store.HistoryPage, error)
}

// historyTimeLayouts are the time forms the history filter reads: RFC
// 3339, and what a datetime-local input or a person types (read as UTC).
var historyTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

// historyQuery reads the history's filter from a request's query: the
// filter as typed, the journal query, and the problem with it ("" when
// none; one of view.HistoryProblem's names).
func historyQuery(r *http.Request) (view.HistoryFilter, store.HistoryQuery, string) {
	q := r.URL.Query()
	get := func(name string) string { return strings.TrimSpace(q.Get(name)) }
	f := view.HistoryFilter{
		Agent: get("agent"), Session: get("session"), Operator: get("operator"), Outcome: get("outcome"),
		Since: get("since"), Until: get("until"), Text: q.Get("q"), Rule: get("rule"),
		Team: get("team"),
	}
	if get("escalated") != "" {
		f.Escalated = "1"
	}
	hq := store.HistoryQuery{
		Agent: f.Agent, Session: f.Session, Operator: f.Operator, Outcome: inbox.SubmissionState(f.Outcome),
		Text: strings.TrimSpace(f.Text), After: q.Get("after"), Rule: f.Rule,
		Team: f.Team, Escalated: f.Escalated != "",
	}
	if f.Rule == view.HistoryRuleAny {
		hq.Rule = store.AnyRule
	}
	// A time is shown back as a datetime-local input holds it; one that
	// cannot be read is not shown back (such an input cannot hold it; one
	// typed in the form always reads).
	since, sinceOK := parseHistoryTime(f.Since)
	until, untilOK := parseHistoryTime(f.Until)
	hq.Since, hq.Until = since, until
	f.Since, f.Until = localTime(since), localTime(until)
	switch {
	case !sinceOK:
		return f, hq, "since"
	case !untilOK:
		return f, hq, "until"
	}
	if !hq.Since.IsZero() && !hq.Until.IsZero() && !hq.Since.Before(hq.Until) {
		return f, hq, "range"
	}
	if f.Outcome != "" && !view.HistoryOutcomeOK(f.Outcome) {
		return f, hq, "outcome"
	}
	return f, hq, ""
}

// parseHistoryTime reads one end of the time range; "" is unbounded.
func parseHistoryTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	for _, layout := range historyTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// handleHistory renders the history page: the filter and one page of
// answers sent. A filter the operator can fix is shown back with the
// problem named (400); without a journal the page says history is off.
func handleHistory(h History, pg *rulePages) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		filter, q, problem := historyQuery(r)
		opts := view.HistoryOptions{
			BasePath: pg.base, Assets: pg.assets, Theme: r.URL.Query().Get("theme"),
			SignedIn: pg.signedIn, Operator: operatorFrom(r.Context()),
			Filter: filter, After: q.After, Off: h == nil, NamedOperators: pg.namedOperators,
			Rule: pg.ruleLookup(r.Context()), Rules: pg.ruleChoices(r.Context()),
		}
		status := http.StatusOK
		var page store.HistoryPage
		if h != nil && problem == "" {
			var err error
			if page, problem, err = readHistory(r, h, q); err != nil {
				pg.internalError(w, r, err)
				return
			}
		}
		if problem != "" {
			opts.Problem, status = problem, http.StatusBadRequest
			page = store.HistoryPage{}
		} else if everyRuleAnswer(filter, q) {
			pg.sawRuleAnswers(r, page)
		}
		v := view.History(page, opts)
		v.Page.RoutesURL = pg.routesURL(r)
		buf, err := render.History(r.Context(), v)
		if err != nil {
			pg.internalError(w, r, err)
			return
		}
		writeHTML(w, status, buf)
	}
}

// readHistory reads the page of History q asks for; a cursor the
// journal does not know (edited, or from another journal) is the
// operator's problem "cursor", not an error.
func readHistory(r *http.Request, h History, q store.HistoryQuery) (store.HistoryPage, string, error) {
	page, err := h.History(r.Context(), q)
	if errors.Is(err, store.ErrBadCursor) {
		return store.HistoryPage{}, "cursor", nil
	}
	return page, "", err
}

// localTime is t as a datetime-local input shows it, in UTC; "" for zero.
func localTime(t time.Time) string {
	switch {
	case t.IsZero():
		return ""
	case t.Nanosecond() != 0 || t.Second() != 0:
		return t.UTC().Format("2006-01-02T15:04:05")
	}
	return t.UTC().Format("2006-01-02T15:04")
}
