package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// Export formats of the history.
const (
	exportJSONL = "jsonl"
	exportCSV   = "csv"
)

// handleHistoryExport streams every page of the history's filter as JSON
// lines or CSV, page by page (each page's writes bounded by
// pageTimeout). A filter the operator can fix is refused with 400 before
// anything is written; a failure after the first page cuts the download
// (the status is sent by then) and is logged.
func handleHistoryExport(h History, pg *rulePages, format string, pageTimeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h == nil {
			http.Error(w, "History is off: this UI keeps no answer journal.", http.StatusNotFound)
			return
		}
		_, q, problem := historyQuery(r)
		var page store.HistoryPage
		if problem == "" {
			var err error
			if page, problem, err = readHistory(r, h, q); err != nil {
				pg.internalError(w, r, err)
				return
			}
		}
		if problem != "" {
			http.Error(w, view.HistoryProblem(problem), http.StatusBadRequest)
			return
		}
		ext, ctype := exportJSONL, "application/jsonl; charset=utf-8"
		if format == exportCSV {
			ext, ctype = exportCSV, "text/csv; charset=utf-8"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", `attachment; filename="aepforms-history.`+ext+`"`)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rc := http.NewResponseController(w)
		var write func(store.Entry) error
		var flush func() error
		rule := pg.ruleLookup(r.Context())
		if format == exportCSV {
			cw := csv.NewWriter(w)
			write = func(e store.Entry) error { return cw.Write(csvRecord(e, rule)) }
			flush = func() error { cw.Flush(); return cw.Error() }
			if err := cw.Write(csvHeader); err != nil {
				return
			}
		} else {
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			write = func(e store.Entry) error { return enc.Encode(exportOf(e, rule)) }
			flush = func() error { return nil }
		}
		err := exportPages(r.Context(), h, q, page, func(p store.HistoryPage) error {
			_ = rc.SetWriteDeadline(time.Now().Add(pageTimeout))
			for _, e := range p.Entries {
				if err := write(e); err != nil {
					return err
				}
			}
			if err := flush(); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			pg.log.Warn("web: history export cut", "path", r.URL.Path, "err", err)
		}
	}
}

// exportPages hands first and every later page of q to each, until the
// last page, an error, or ctx ends.
func exportPages(ctx context.Context, h History, q store.HistoryQuery, first store.HistoryPage, each func(store.HistoryPage) error) error {
	page := first
	for {
		if err := each(page); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		q.After = page.Next
		var err error
		if page, err = h.History(ctx, q); err != nil {
			return err
		}
	}
}

// exportEntry is one answer sent, as the JSON lines export writes it.
type exportEntry struct {
	CommandID string    `json:"command_id"`
	PostedAt  time.Time `json:"posted_at"`
	Agent     string    `json:"agent"`
	Source    string    `json:"source"`
	Session   string    `json:"session"`
	RequestID string    `json:"request_id"`
	Question  string    `json:"question"`
	// QuestionText is the question as plain text (its Markdown read).
	QuestionText string `json:"question_text"`
	Operator     string `json:"operator"`
	// Answer is what the agent received (ids); AnswerWords the same
	// answer as the card showed it (labels, Other text marked).
	Answer      aep.Answer     `json:"answer"`
	AnswerWords string         `json:"answer_words"`
	State       string         `json:"state"`
	Reason      string         `json:"reason,omitempty"`
	Detail      string         `json:"detail,omitempty"`
	SettledAt   *time.Time     `json:"settled_at,omitempty"`
	Changes     []exportChange `json:"changes"`
	// Recorded is what the agent recorded (attention.answered) for the
	// answer, absent while nothing was.
	Recorded *exportRecorded `json:"recorded,omitempty"`
	// Rule is the rule that sent the answer (Operator is "rule:{id}"),
	// by its words and maker; absent for an operator's answer.
	Rule *exportRule `json:"rule,omitempty"`
	// Routing is where the question was routed and each reminder and
	// escalation sent, absent for a question no route matched.
	Routing *exportRouting `json:"routing,omitempty"`
}

// exportRouting is an answered question's routing: the team its route
// named, and each step after, oldest first.
type exportRouting struct {
	Team      string       `json:"team"`
	Steps     []exportStep `json:"steps"`
	Escalated bool         `json:"escalated"`
}

// exportStep is one step of a question's routing and when: a reminder
// ("reminded") or an escalation ("escalated") names the team told; an
// assignment ("assigned") the operator or the team it went to and who
// assigned it.
type exportStep struct {
	Kind     string    `json:"kind"`
	Team     string    `json:"team,omitempty"`
	Operator string    `json:"operator,omitempty"`
	By       string    `json:"by,omitempty"`
	At       time.Time `json:"at"`
}

// exportAssigned is an assignment's step kind in the export.
const exportAssigned = "assigned"

// routingOf is e's routing for the export, nil when it was not routed.
func routingOf(history []store.RoutingStep) *exportRouting {
	if len(history) == 0 {
		return nil
	}
	r := &exportRouting{Steps: []exportStep{}}
	for _, s := range history {
		switch s.Kind {
		case store.RoutedTo:
			r.Team = s.Team
		case inbox.StepReminded, inbox.StepEscalated:
			r.Steps = append(r.Steps, exportStep{Kind: s.Kind, Team: s.Team, At: s.At.UTC()})
			r.Escalated = r.Escalated || s.Kind == inbox.StepEscalated
		case store.Assigned:
			if a, ok := store.ParseAssigned(s.Team); ok {
				st := exportStep{Kind: exportAssigned, Operator: a.To, By: a.By, At: s.At.UTC()}
				if a.Team {
					st.Team, st.Operator = a.To, ""
				}
				r.Steps = append(r.Steps, st)
			}
		}
	}
	return r
}

// exportRule names the rule that sent an answer: its id, its name as
// the Rules page shows it, who made it ("" when they gave no name), and
// whether it was deleted since.
type exportRule struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Maker   string `json:"maker"`
	Deleted bool   `json:"deleted,omitempty"`
}

// ruleOf is the rule behind answer s, through lookup; nil for an
// operator's answer (or a rule the journal no longer names).
func ruleOf(s inbox.Submission, lookup view.RuleLookup) *exportRule {
	id, ok := rules.RuleOf(s.By)
	if !ok || lookup == nil {
		return nil
	}
	ref, found := lookup(s.By)
	if !found {
		return &exportRule{ID: id}
	}
	return &exportRule{ID: id, Name: ref.Name, Maker: ref.Maker, Deleted: ref.Gone}
}

// exportRecorded is what the agent recorded, and when this UI saw it.
type exportRecorded struct {
	Answer      aep.Answer `json:"answer"`
	AnswerWords string     `json:"answer_words"`
	By          string     `json:"by,omitempty"`
	Via         string     `json:"via,omitempty"`
	Capture     string     `json:"capture"`
	At          time.Time  `json:"at"`
}

type exportChange struct {
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

func exportOf(e store.Entry, rule view.RuleLookup) exportEntry {
	s := e.Submission
	x := exportEntry{
		CommandID: s.CommandID, PostedAt: s.At.UTC(), Agent: s.Agent, Source: s.Key.Source, Session: s.Key.Session,
		RequestID: s.Key.RequestID, Question: s.Question, QuestionText: view.QuestionText(s.Question), Operator: s.By,
		Answer: s.Answer, AnswerWords: view.AnswerWords(s, s.Answer),
		State: string(s.State), Reason: s.Reason, Detail: s.Detail, Changes: []exportChange{},
		Rule: ruleOf(s, rule), Routing: routingOf(e.Routing),
	}
	if !s.SettledAt.IsZero() {
		t := s.SettledAt.UTC()
		x.SettledAt = &t
	}
	for _, c := range e.Changes {
		x.Changes = append(x.Changes, exportChange{State: string(c.State), Reason: c.Reason, Detail: c.Detail, At: c.At.UTC()})
	}
	if r := s.Recorded; r != nil {
		x.Recorded = &exportRecorded{Answer: r.Answer, AnswerWords: view.AnswerWords(s, r.Answer), By: r.By, Via: r.Via, Capture: r.Capture.String(), At: s.RecordedAt.UTC()}
	}
	return x
}

// csvHeader names the CSV export's columns: the ids the agent received
// first (as before), then the same answer in the words its card showed
// (question_text, answer_words, recorded_answer_words), then the rule
// that sent it, when one did (rule_id, rule_name, rule_maker; operator
// holds "rule:{id}"), then where the question was routed (routed_to, the
// team; routing, its steps as History words them).
var csvHeader = []string{"posted_at", "agent", "session", "request_id", "operator", "question",
	"option", "text", "values", "state", "reason", "detail", "settled_at", "command_id", "source",
	"recorded_option", "recorded_text", "recorded_values", "recorded_at",
	"question_text", "answer_words", "recorded_answer_words",
	"rule_id", "rule_name", "rule_maker", "routed_to", "routing"}

// csvRecord is one answer sent as a CSV row, every cell escaped against
// spreadsheet formulas (csvCell); rule names the rule behind an answer
// a rule sent.
func csvRecord(e store.Entry, rule view.RuleLookup) []string {
	s := e.Submission
	settled := ""
	option, text, values := answerCells(s.Answer)
	if !s.SettledAt.IsZero() {
		settled = s.SettledAt.UTC().Format(time.RFC3339Nano)
	}
	var recOption, recText, recValues, recAt, recWords string
	if r := s.Recorded; r != nil {
		recOption, recText, recValues = answerCells(r.Answer)
		recWords = view.AnswerWords(s, r.Answer)
		recAt = s.RecordedAt.UTC().Format(time.RFC3339Nano)
	}
	rec := []string{s.At.UTC().Format(time.RFC3339Nano), s.Agent, s.Key.Session, s.Key.RequestID, s.By, s.Question,
		option, text, values, string(s.State), s.Reason, s.Detail, settled, s.CommandID, s.Key.Source,
		recOption, recText, recValues, recAt,
		view.QuestionText(s.Question), view.AnswerWords(s, s.Answer), recWords, "", "", "", "", view.RoutingWords(e.Routing)}
	if r := ruleOf(s, rule); r != nil {
		rec[len(rec)-5], rec[len(rec)-4], rec[len(rec)-3] = r.ID, r.Name, r.Maker
	}
	if r := routingOf(e.Routing); r != nil {
		rec[len(rec)-2] = r.Team
	}
	for i := range rec {
		rec[i] = csvCell(rec[i])
	}
	return rec
}

// answerCells are an answer's option, text and values (as JSON) for
// CSV cells.
func answerCells(a aep.Answer) (option, text, values string) {
	if a.Text != nil {
		text = *a.Text
	}
	if len(a.Values) > 0 {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(a.Values) == nil {
			values = strings.TrimSpace(b.String())
		}
	}
	return a.Option, text, values
}

// csvCell escapes a cell a spreadsheet would read as a formula: one that
// starts with '=', '+', '-' or '@', their full-width and small forms
// (＝ ＋ － ＠ ﹦ ﹢ ﹣ ﹫) or the minus sign, or with any whitespace or
// invisible format character (newline, tab, space, NBSP, ZWSP, BOM…),
// which some spreadsheets skip before reading one, gets a leading single
// quote. Control characters become U+FFFD first (view.Text), as in every
// response. The export's own times and ids never start with one.
func csvCell(s string) string {
	s = view.Text(s)
	r, _ := utf8.DecodeRuneInString(s)
	if s != "" && (strings.ContainsRune("=+-@＝＋－＠﹦﹢﹣﹫−", r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r)) {
		return "'" + s
	}
	return s
}
