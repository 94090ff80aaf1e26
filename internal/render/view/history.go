package view

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// HistoryQuestionRunes is how much of a question a history row shows; the
// export holds all of it.
const HistoryQuestionRunes = 600

// HistoryFilter is the history's filter as the operator typed it (the
// page's query parameters): shown back in the filter form and carried by
// the paging and export links.
type HistoryFilter struct {
	Agent, Session, Operator, Outcome string
	// Since and Until are the time range, as typed ("2026-03-01T12:00",
	// read as UTC).
	Since, Until string
	// Text is the search over the question and the values sent (q).
	Text string
	// Rule narrows to the answers rules sent: HistoryRuleAny for any
	// rule's, a rule's id for that rule's (rule).
	Rule string
	// Team narrows to the questions routed to a team (team); Escalated
	// ("1") to those escalated (escalated).
	Team, Escalated string
}

// Values is the filter as query parameters, empty ones left out.
func (f HistoryFilter) Values() url.Values {
	q := url.Values{}
	for _, kv := range [][2]string{{"agent", f.Agent}, {"session", f.Session}, {"operator", f.Operator},
		{"outcome", f.Outcome}, {"rule", f.Rule}, {"since", f.Since}, {"until", f.Until}, {"q", f.Text},
		{"team", f.Team}, {"escalated", f.Escalated}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	return q
}

// HistoryOptions are what History needs beyond the page of entries.
type HistoryOptions struct {
	BasePath string
	Assets   Assets
	Theme    string
	// SignedIn and Operator are as in PageOptions (the header's account).
	SignedIn bool
	Operator string
	// Rule names the rule behind an answer a rule sent; nil: none.
	Rule RuleLookup
	// Rules are the rules the filter offers ("sent by"); none: the
	// filter offers any rule's answers only when one is in force.
	Rules []RuleChoice
	// Filter is the filter in force, as typed.
	Filter HistoryFilter
	// After is the cursor the page was read from ("" for the newest).
	After string
	// Off is true when the UI keeps no journal: the page says history is off.
	Off bool
	// NamedOperators is true when operators sign in with their own name and
	// secret (--operators-file): the names are authenticated, and the page
	// says which kind of name it shows.
	NamedOperators bool
	// Problem names what is wrong with the filter (the page shows no
	// entries): one of HistoryProblem's names ("since", "until", "range",
	// "outcome", "cursor").
	Problem string
}

// HistoryView is the history page: the filter, one page of answers sent,
// newest first, and the links to the next page and the exports.
type HistoryView struct {
	Page    PageView // the shell: title, asset URLs, account
	Heading string
	// Who says what the "answered by" names are: authenticated operators,
	// or labels typed at sign-in under a shared secret.
	Who      string
	Action   string // the filter form's GET action, {base}/history
	Filter   HistoryFilter
	Outcomes []HistoryChoice // the outcome filter's choices
	// RuleChoices are the "Sent by a rule" filter's choices: anyone,
	// any rule, each rule.
	RuleChoices []HistoryChoice
	Active      bool // a filter is in force
	// More is true when a filter besides the search is in force: the
	// form shows those filters open.
	More     bool
	ClearURL string // the history without a filter
	Off      string // non-empty: history is off, and why
	Problem  string // a problem with the filter, in words
	// ProblemField is the id of the filter control the problem is about
	// ("" when it is about none): the summary links to it and the control
	// is marked.
	ProblemField string
	Empty        string // shown when Rows is empty
	Rows         []HistoryRow
	// NextURL is the page of older answers ("" on the last page);
	// NewestURL the first page, set when this is not it.
	NextURL, NewestURL string
	// CSVURL and JSONLURL export every page of the filter.
	CSVURL, JSONLURL string
}

// HistoryChoice is one choice of the outcome filter.
type HistoryChoice struct {
	Value, Label string
	Selected     bool
}

// HistoryRow is one answer sent.
type HistoryRow struct {
	// Routing says where the question was routed ("Routed to oncall",
	// "Routed to oncall;" when steps follow; "" when no route matched
	// it) and RoutingSteps who assigned it to
	// whom and what was sent, oldest first: "assigned to bo by ann 09:10
	// UTC, reminded bo 09:12 UTC, escalated to leads 09:22 UTC".
	Routing      string
	RoutingSteps []HistoryStep
	Escalated    bool
	ID           string // "entry-{hash of the command id}": the row's element id
	Question     string
	// QuestionCut is set when the question is shown in part.
	QuestionCut                  string
	Agent, Session, SessionShort string
	RequestID                    string
	Operator                     string // who answered; the no-name words when none was given
	Named                        bool   // an operator name was given
	AtISO, AtText, AtTitle       string // when it was posted
	Values                       []RecordedValue
	Outcome                      HistoryOutcome
	Changes                      []HistoryChange
	CommandID                    string
	// Recorded is what the agent recorded (attention.answered) for this
	// answer, labelled as what was sent is; RecordedText heads it (with
	// who the agent says answered, and how), RecordedAtISO and
	// RecordedAtTitle are when this UI saw it, RecordedWithheld notes
	// values withheld at the event's capture level. Empty when nothing
	// was recorded.
	Recorded                       []RecordedValue
	RecordedText, RecordedWithheld string
	RecordedAgent                  []string // the agent's words inside RecordedText
	RecordedSpans                  []Span   // RecordedText split at them
	RecordedAtISO, RecordedAtTitle string
	// AgentURL and SessionURL are the history filtered by this row's
	// agent, and by its session.
	AgentURL, SessionURL string
	// ShowBy is false when answers carry no name at all (no operator
	// secret): the row then says nothing of who answered.
	ShowBy bool
	// Rule is the rule that sent the answer; nil for an operator's.
	Rule *RuleRef
}

// HistoryOutcome is what became of an answer: the outcome in the UI's
// words, with the agent's or relay's reason and detail.
type HistoryOutcome struct {
	State, Text, Tone string
	Reason, Detail    string
}

// HistoryChange is one state an answer moved through, with its time.
type HistoryChange struct {
	Text, AtISO, AtTitle string
}

// htmlTime is the datetime attribute's form: RFC 3339 with at most three
// digits of a second's fraction (HTML allows no more).
const htmlTime = "2006-01-02T15:04:05.999Z07:00"

// HistoryAnchor is the element id of a command's history row.
func HistoryAnchor(commandID string) string {
	h := fnv.New64a()
	h.Write([]byte(commandID))
	return fmt.Sprintf("entry-%016x", h.Sum64())
}

// HistoryErrorsID is the history's error summary element id.
const HistoryErrorsID = "history-errors"

// historyProblemField is the filter control each problem is about.
var historyProblemField = map[string]string{"since": "h-since", "until": "h-until", "range": "h-since", "outcome": "h-outcome"}

// HistoryProblem words a problem with the history filter: "since",
// "until", "range", "outcome" or "cursor".
func HistoryProblem(what string) string { return words.history["bad-"+what] }

// HistoryOutcomeOK reports whether s is an outcome the filter offers.
func HistoryOutcomeOK(s string) bool {
	for _, o := range words.outcomes {
		if string(o.State) == s {
			return true
		}
	}
	return false
}

// History builds the history page from one page of the journal.
func History(page store.HistoryPage, opts HistoryOptions) HistoryView {
	base := root(opts.BasePath)
	title := words.history["title"]
	problem, field := "", ""
	if opts.Problem != "" {
		title = "Error: " + title
		problem, field = HistoryProblem(opts.Problem), historyProblemField[opts.Problem]
	}
	who := words.history["who-label"]
	switch {
	case opts.NamedOperators:
		who = words.history["who-named"]
	case !opts.SignedIn:
		who = words.history["who-open"]
	}
	v := HistoryView{
		Who:     who,
		Page:    subPage(title, base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		Heading: words.history["heading"],
		Action:  base + "/history",
		Filter:  opts.Filter,
		Problem: problem, ProblemField: field,
	}
	if problem != "" {
		v.Page.FocusErrors = HistoryErrorsID
	}
	q := opts.Filter.Values()
	v.Active = len(q) > 0
	v.More = v.Active && !(len(q) == 1 && q.Has("q"))
	v.ClearURL = v.Action
	v.CSVURL = withQuery(base+"/history.csv", q)
	v.JSONLURL = withQuery(base+"/history.jsonl", q)
	v.RuleChoices = historyRuleChoices(opts.Rules, opts.Filter.Rule)
	for _, o := range words.outcomes {
		v.Outcomes = append(v.Outcomes, HistoryChoice{Value: string(o.State), Label: o.Short, Selected: string(o.State) == opts.Filter.Outcome})
	}
	if opts.Off {
		v.Off = words.history["off"]
		safeHistory(&v)
		return v
	}
	if page.Next != "" {
		nq := opts.Filter.Values()
		nq.Set("after", page.Next)
		v.NextURL = withQuery(v.Action, nq)
	}
	if opts.After != "" {
		v.NewestURL = withQuery(v.Action, q)
	}
	v.Empty = words.history["empty"]
	if v.Active || opts.After != "" {
		v.Empty = words.history["none-match"]
	}
	for _, e := range page.Entries {
		r := historyRow(e, ruleOf(opts.Rule, e.Submission.By, e.Submission.At))
		r.AgentURL = withQuery(v.Action, url.Values{"agent": {e.Submission.Agent}})
		r.SessionURL = withQuery(v.Action, url.Values{"session": {e.Submission.Key.Session}})
		r.ShowBy = opts.SignedIn || r.Named
		v.Rows = append(v.Rows, r)
	}
	safeHistory(&v)
	return v
}

func withQuery(u string, q url.Values) string {
	if len(q) == 0 {
		return u
	}
	return u + "?" + q.Encode()
}

// historyRow is one entry as the history shows it; rule is the rule that
// sent it (nil for an operator's answer).
func historyRow(e store.Entry, rule *RuleRef) HistoryRow {
	s := e.Submission
	r := HistoryRow{
		ID:           HistoryAnchor(s.CommandID),
		CommandID:    s.CommandID,
		Question:     QuestionText(s.Question),
		Agent:        s.Agent,
		Session:      s.Key.Session,
		SessionShort: shortenID(s.Key.Session, idRunes),
		RequestID:    s.Key.RequestID,
		Operator:     s.By,
		Named:        s.By != "",
		Outcome:      historyOutcome(s.State, s.Reason, s.Detail),
		Rule:         rule,
	}
	historyRoutingRow(&r, e.Routing, s.At)
	if r.Question == "" {
		r.Question = words.history["no-question"]
	}
	if utf8.RuneCountInString(r.Question) > HistoryQuestionRunes {
		r.Question = string([]rune(r.Question)[:HistoryQuestionRunes]) + "…"
		r.QuestionCut = fmt.Sprintf(words.history["cut"], HistoryQuestionRunes)
	}
	if !r.Named {
		r.Operator = words.history["no-name"]
	}
	if r.Agent == "" {
		r.Agent = words.history["no-agent"]
	}
	if !s.At.IsZero() {
		r.AtISO = s.At.UTC().Format(htmlTime)
		r.AtText = s.At.UTC().Format("2 Jan 2006, 15:04 UTC")
		r.AtTitle = exactTime(s.At)
	}
	// The submission keeps the request's kind, options and field specs:
	// an option is shown by its label ("Allow once"), fields through
	// their specs. Answers kept before the journal held options show an
	// option by its id.
	req := aep.Request{Kind: s.Kind, Options: s.Options, Fields: s.Fields}
	if len(s.Fields) > 0 && req.Kind == "" {
		req.Kind = aep.KindForm
	}
	r.Values = recordedValues(req, s.Answer, aep.CaptureFull, false)
	if o := s.Recorded; o != nil {
		r.Recorded = recordedValues(req, o.Answer, o.Capture, false)
		r.RecordedText = words.history["recorded"]
		by := phrase("by ", o.By)
		if rule != nil && (o.By == s.By || strings.HasSuffix(o.By, "/"+s.By)) {
			// The agent names the command's sender, this UI and the
			// rule's id ("aepforms/rule:01J…"): the row names the rule
			// in words already, so the line says it was this rule.
			by = fmt.Sprintf(words.history["recorded-rule"], rule.Name)
		}
		as := ""
		if o.By != "" || o.Via != "" {
			as = fmt.Sprintf(words.history["recorded-as"], strings.TrimSpace(by+phrase(" via ", o.Via)))
			r.RecordedText += as
			r.RecordedAgent = []string{o.By, o.Via}
			if by != phrase("by ", o.By) {
				r.RecordedAgent = []string{rule.Name, o.Via}
			}
		}
		if s.State == inbox.SubmissionAccepted {
			// Accepted, and recorded: settled for good.
			r.Outcome.Text = words.history["outcome-recorded"]
		}
		if slices.Equal(r.Recorded, r.Values) {
			// The answer once: what the agent recorded is shown only
			// where it differs from what was sent.
			r.Recorded = nil
			r.RecordedText = words.history["recorded-same"] + as
		}
		if hasWithheld(r.Recorded) {
			r.RecordedWithheld = "Values withheld at capture " + o.Capture.String() + " are not shown."
		}
		if !s.RecordedAt.IsZero() {
			r.RecordedAtISO, r.RecordedAtTitle = s.RecordedAt.UTC().Format(htmlTime), exactTime(s.RecordedAt)
		}
	}
	if len(s.Fields) == 0 {
		// No specs to label by: every value by its id.
		for _, id := range slices.Sorted(maps.Keys(s.Answer.Values)) {
			r.Values = append(r.Values, RecordedValue{Label: id, Placeholder: true, Value: formatValue(aep.FieldSpec{}, s.Answer.Values[id], true)})
		}
	}
	for _, c := range e.Changes {
		r.Changes = append(r.Changes, HistoryChange{
			Text: historyOutcome(c.State, c.Reason, "").Text, AtISO: c.At.UTC().Format(htmlTime), AtTitle: exactTime(c.At),
		})
	}
	return r
}

// historyOutcome words a submission state, with its reason.
func historyOutcome(state inbox.SubmissionState, reason, detail string) HistoryOutcome {
	o := HistoryOutcome{State: string(state), Text: string(state), Tone: "neutral", Reason: reason, Detail: detail}
	for _, w := range words.outcomes {
		if w.State == state {
			o.Text, o.Tone = w.Label, w.Tone
		}
	}
	if reason == "" {
		return o
	}
	why := reason
	if t, ok := words.historyReason[state][reason]; ok {
		o.Text += ": " + t
		if state == inbox.SubmissionQueued && reason == inbox.ReasonNoRoute {
			o.Text = t // queued for its agent, not for the relay
		}
		return o
	}
	if state == inbox.SubmissionFailed {
		if t, ok := words.historyFailed[reason]; ok {
			why = t
		} else {
			why = fmt.Sprintf(words.historyFailed[""], reason)
		}
	}
	o.Text += ": " + why
	return o
}

// safeHistory applies the text rules to the history page: markers in the
// agent's and operator's words, then Text over every string.
func safeHistory(v *HistoryView) {
	for i := range v.Rows {
		r := &v.Rows[i]
		r.Question, r.Agent, r.Operator = Marked(r.Question), Marked(r.Agent), Marked(r.Operator)
		if r.Rule != nil {
			r.Rule.Name, r.Rule.Maker = Marked(r.Rule.Name), Marked(r.Rule.Maker)
		}
		for j := range r.Values {
			rv := &r.Values[j]
			rv.Label, rv.Value = Marked(rv.Label), Marked(rv.Value)
		}
		for j := range r.Recorded {
			rv := &r.Recorded[j]
			rv.Label, rv.Value = Marked(rv.Label), Marked(rv.Value)
		}
	}
	scrub(reflect.ValueOf(v).Elem())
	for i := range v.Rows {
		r := &v.Rows[i]
		r.RecordedSpans = spans(r.RecordedText, r.RecordedAgent)
	}
}

// RoutingWords is an answered question's routing history as History
// shows it ("Routed to oncall; reminded oncall 09:12 UTC, escalated to
// leads 09:22 UTC"), "" when it was not routed.
func RoutingWords(history []store.RoutingStep) string {
	s, _ := historyRouting(history)
	return s
}

// historyRouting words an answered question's routing history for the
// exports: its team, then each assignment, reminder and escalation with
// its exact time, in the order they came.
func historyRouting(history []store.RoutingStep) (string, bool) {
	lead, steps, escalated := routingSteps(history)
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = st.Words + " " + exactTime(st.At)
	}
	line := strings.Join(parts, ", ")
	switch {
	case lead == "":
		return line, escalated
	case line == "":
		return lead, escalated
	}
	return lead + "; " + line, escalated
}

// HistoryStep is one step of History's routing line: its words
// ("reminded oncall") and when, as the card says it (AtText "20:04 UTC",
// with the date only when it is not the answer's own day) with the exact
// instant in AtISO and AtTitle; After is the punctuation after it.
type HistoryStep struct {
	Words, AtISO, AtText, AtTitle, After string
}

// routingStep is one step of a routing history in words, and when.
type routingStep struct {
	Words string
	At    time.Time
}

// routingSteps reads a routing history: its lead ("Routed to oncall";
// "" when no route matched it), each assignment, reminder and escalation
// in the order they came (the first capitalised when there is no lead),
// and whether it was escalated.
func routingSteps(history []store.RoutingStep) (string, []routingStep, bool) {
	var team string
	var steps []routingStep
	escalated := false
	for _, s := range history {
		switch s.Kind {
		case store.RoutedTo:
			team = s.Team
		case inbox.StepReminded:
			steps = append(steps, routingStep{"reminded " + s.Team, s.At})
		case inbox.StepEscalated:
			steps = append(steps, routingStep{"escalated to " + s.Team, s.At})
			escalated = true
		case store.Assigned:
			if a, ok := store.ParseAssigned(s.Team); ok {
				steps = append(steps, routingStep{historyAssigned(a), s.At})
			}
		}
	}
	if team != "" {
		return "Routed to " + team, steps, escalated
	}
	if len(steps) > 0 {
		steps[0].Words = strings.ToUpper(steps[0].Words[:1]) + steps[0].Words[1:] // assigned, no route matched it
	}
	return "", steps, escalated
}

// historyRoutingRow sets row r's routing line from history, its times
// read against at, when the answer was posted.
func historyRoutingRow(r *HistoryRow, history []store.RoutingStep, at time.Time) {
	lead, steps, escalated := routingSteps(history)
	r.Routing, r.Escalated = lead, escalated
	if lead != "" && len(steps) > 0 {
		r.Routing += ";"
	}
	for i, st := range steps {
		hs := HistoryStep{Words: st.Words, AtISO: st.At.UTC().Format(htmlTime), AtText: deadlineTime(st.At, at), AtTitle: exactTime(st.At)}
		if i < len(steps)-1 {
			hs.After = ", "
		}
		r.RoutingSteps = append(r.RoutingSteps, hs)
	}
}

// historyAssigned words assignment a: "assigned to bo by ann",
// "assigned to team oncall by ann".
func historyAssigned(a inbox.Assignment) string {
	out := "assigned to "
	if a.Team {
		out += "team "
	}
	out += a.To
	if a.By != "" {
		out += " by " + a.By
	}
	return out
}
