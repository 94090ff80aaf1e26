package view

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
)

// RulesOptions are what the Rules page (GET /rules) is drawn with.
type RulesOptions struct {
	BasePath string
	Assets   Assets
	Theme    string
	SignedIn bool
	Operator string
	Now      time.Time
	// CanChange is false on a watch-only UI: the rules are listed, but
	// none can be paused, resumed or deleted here.
	CanChange bool
	// Answerer is true when the operator may pause a rule but not
	// resume or delete one (their role is answerer, not admin).
	Answerer bool
	// MaxRate and Window are the rate pause, for the intro.
	MaxRate int
	Window  string
	// Problem is a refused change's message (the page is drawn again).
	Problem string
	// Answered is, by rule id, the newest requests each rule answered
	// (store.RuleBook.RuleAnswered); NoHistory: History is off, so none
	// is linked.
	Answered  map[string][]store.RuleUseRecord
	NoHistory bool
	// Misses are, by rule id, the requests each rule matched only by
	// their connection since it last answered (rules.Runner.Misses).
	Misses map[string]rules.Missed
}

// RuleFlag is a rule's "not answering" flag: since when, the connection
// its agent's questions now come from ("" when the relay names none),
// and how many it matched so.
type RuleFlag struct {
	SinceISO, SinceText, SinceTitle string
	Instance                        string
	Requests                        string
	// URL is the inbox narrowed to the rule's agent: where those
	// questions wait.
	URL string
}

// RulesView is the Rules page.
type RulesView struct {
	Page    PageView
	Heading string
	Intro   string
	Empty   string
	Problem string
	Rows    []RuleRow
	// CanChange: each row has its pause/resume/delete buttons.
	CanChange bool
}

// RuleRow is one rule as the Rules page lists it.
type RuleRow struct {
	ID, Anchor string
	Name       string
	// Question is the question the rule was made from, as its card
	// showed it (cut); Scope which questions it answers, in words.
	Question, Scope string
	// Match is what else a request must be, a line each; Answer what it
	// gets.
	Match []string
	// Session is the session the rule is held to ("" any), SessionShort
	// it shortened as cards show it (the whole id in its title).
	Session, SessionShort string
	Answer                string
	Note                  string
	Maker                 string
	// Made, Expires and LastUse in words, with their exact times.
	MadeISO, ExpiresISO, LastUseISO string // for <time datetime>
	MadeText, MadeTitle             string
	ExpiresText, ExpiresTitle       string
	Uses                            int
	LastUseText, LastUseTitle       string
	// Answered is the newest requests it answered, each linking to its
	// History entry.
	Answered []RuleUseRow
	// State is "active", "paused" or "expired"; StateText its words and
	// Reason why it is paused.
	State, StateText, Reason string
	// Changes are who paused or resumed it and when, newest first, at
	// most RuleChangesShown; ChangesMore says how many earlier ones are
	// not shown ("" for none).
	Changes     []RuleChangeRow
	ChangesMore string
	// NotAnswering flags an active rule that matched requests only by
	// their connection since it last answered one; nil otherwise.
	NotAnswering *RuleFlag
	// PauseURL, ResumeURL, DeleteURL are the buttons' actions (only the
	// ones that apply are set).
	PauseURL, ResumeURL, DeleteURL string
}

// RuleChangeRow is one pause or resume of a rule: "Paused by bob", when.
type RuleChangeRow struct {
	Text          string
	AtISO, AtText string
	AtTitle       string
}

// RuleChangesShown is how many of a rule's changes its row lists.
const RuleChangesShown = 5

// RuleUseRow is one request a rule answered.
type RuleUseRow struct {
	Question      string
	URL           string // its History entry ("" when History is off)
	AtISO, AtText string
	AtTitle       string
}

// ruleQuestionRunes is how much of a rule's question the Rules page
// shows (a card cuts labels at rules.LabelRunes; the question is what
// the rule compares, so more of it).
const ruleQuestionRunes = 2000

// Rules builds the Rules page from the rules kept.
func Rules(rules []store.Rule, opts RulesOptions) RulesView {
	base := root(opts.BasePath)
	title := "Rules"
	v := RulesView{
		Page:    subPage(title, base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		Heading: "Rules (standing answers)",
		Intro: fmt.Sprintf("A rule answers each new request that matches it, as its maker answered the one it was made from. "+
			"It pauses itself if it would answer more than %d requests within %s. Make one from a card: “Answer like this from now on…”.", opts.MaxRate, opts.Window),
		Empty:     "No rules. Make one from a permission, review, choice or form card: open “Answer like this from now on…” before you answer.",
		Problem:   opts.Problem,
		CanChange: opts.CanChange,
	}
	if !opts.CanChange {
		v.Intro += " This UI is watch-only: it runs no rule and changes none."
	}
	if opts.Problem != "" {
		v.Page.Title = "Error: " + title
	}
	for _, r := range rules {
		v.Rows = append(v.Rows, ruleRow(r, base, opts))
	}
	for i := range v.Rows {
		r := &v.Rows[i]
		r.Name, r.Note, r.Maker, r.Answer, r.Reason = Marked(r.Name), Marked(r.Note), Marked(r.Maker), Marked(r.Answer), Marked(r.Reason)
		r.Question, r.Scope = Marked(r.Question), Marked(r.Scope)
		for j := range r.Answered {
			r.Answered[j].Question = Marked(r.Answered[j].Question)
		}
		for j := range r.Changes {
			r.Changes[j].Text = Marked(r.Changes[j].Text)
		}
		for j := range r.Match {
			r.Match[j] = Marked(r.Match[j])
		}
	}
	scrub(reflect.ValueOf(&v).Elem())
	return v
}

func ruleRow(r store.Rule, base string, opts RulesOptions) RuleRow {
	m := r.Match
	row := RuleRow{
		ID: r.ID, Anchor: RuleAnchor(r.ID), Name: r.Name, Note: r.Note, Maker: r.Maker, Uses: r.Uses,
		MadeText: relTime(r.Created, opts.Now), MadeTitle: exactTime(r.Created),
		ExpiresText: untilText(r.Expires, opts.Now), ExpiresTitle: exactTime(r.Expires),
		Answer:  ruleAnswer(m, r.Answer),
		MadeISO: r.Created.UTC().Format(htmlTime), ExpiresISO: r.Expires.UTC().Format(htmlTime),
	}
	if row.Maker == "" {
		row.Maker = words.answered["no-name"] // as a card and History say it
	}
	row.Name = rules.Cut(row.Name, rules.LabelRunes)
	row.Scope = rules.ScopeWords(m)
	if m.Question != "" {
		row.Question = rules.Cut(m.Question, ruleQuestionRunes)
	}
	row.Match = append(row.Match, "Kind: "+m.Kind)
	if len(m.Options) > 0 {
		labels := make([]string, len(m.Options))
		for i, o := range m.Options {
			labels[i] = fmt.Sprintf("%s (%s)", rules.Cut(o.Label, rules.LabelRunes), rules.Cut(o.ID, idRunes))
		}
		row.Match = append(row.Match, "Options: "+strings.Join(labels, ", "))
	}
	if len(m.Fields) > 0 {
		labels := make([]string, len(m.Fields))
		for i, f := range m.Fields {
			labels[i] = rules.Cut(f.Label, rules.LabelRunes)
		}
		row.Match = append(row.Match, "Fields: "+strings.Join(labels, ", "))
	}
	row.Match = append(row.Match, scope("Agent", rules.Cut(m.Agent, rules.LabelRunes)))
	if m.Instance != "" {
		cs := make([]string, 0, 1+len(m.Carried))
		for _, in := range append([]string{m.Instance}, m.Carried...) {
			cs = append(cs, "“"+rules.Cut(in, rules.LabelRunes)+"”")
		}
		what := "Connection: "
		if len(cs) > 1 {
			what = "Connections: "
		}
		row.Match = append(row.Match, what+strings.Join(cs, ", ")+" (the agent's instance, as the relay names it)")
	}
	if m.Scope != store.ScopeUnscoped {
		tool := m.Tool
		if tool == "" {
			tool = "none named"
		}
		row.Match = append(row.Match, "Tool: "+rules.Cut(tool, rules.LabelRunes))
	}
	row.Session, row.SessionShort = m.Session, shortenID(m.Session, idRunes)
	for _, u := range opts.Answered[r.ID] {
		ur := RuleUseRow{Question: rules.Cut(QuestionText(u.Question), rules.LabelRunes),
			AtISO: u.At.UTC().Format(htmlTime), AtText: relTime(u.At, opts.Now), AtTitle: exactTime(u.At)}
		if !opts.NoHistory {
			ur.URL = withQuery(base+"/history", url.Values{"session": {u.Session}}) + "#" + HistoryAnchor(u.CommandID)
		}
		row.Answered = append(row.Answered, ur)
	}
	if !r.LastUse.IsZero() {
		row.LastUseText, row.LastUseTitle = relTime(r.LastUse, opts.Now), exactTime(r.LastUse)
		row.LastUseISO = r.LastUse.UTC().Format(htmlTime)
	}
	row.Changes, row.ChangesMore = ruleChanges(r.Changes, opts.Now)
	row.NotAnswering = notAnswering(r, opts)
	rule := base + "/rules/" + url.PathEscape(r.ID)
	switch {
	case r.State == store.RulePaused:
		row.State, row.StateText, row.Reason = "paused", "Paused", r.Reason
		if row.Reason == "" {
			row.Reason = pausedBy(r.Changes)
		}
		row.ResumeURL = rule + "/resume"
	case !opts.Now.Before(r.Expires):
		row.State, row.StateText = "expired", "Expired"
	default:
		row.State, row.StateText = "active", "Active"
		row.PauseURL = rule + "/pause"
	}
	switch {
	case opts.CanChange && opts.Answerer:
		row.ResumeURL = "" // a brake anyone may pull; only an admin releases it
	case opts.CanChange:
		row.DeleteURL = rule + "/delete"
	default:
		row.PauseURL, row.ResumeURL = "", ""
	}
	return row
}

func scope(what, v string) string {
	if v == "" {
		return what + ": any"
	}
	return what + ": " + v
}

// ruleAnswer is a rule's answer in the request's words.
func ruleAnswer(m store.RuleMatch, a aep.Answer) string {
	var parts []string
	if a.Option != "" {
		label := a.Option
		for _, o := range m.Options {
			if o.ID == a.Option {
				label = o.Label
			}
		}
		label = rules.Cut(label, rules.LabelRunes)
		parts = append(parts, label)
	}
	for _, f := range m.Fields {
		if v, ok := a.Values[f.ID]; ok {
			parts = append(parts, rules.Cut(fmt.Sprintf("%s: %v", f.Label, v), rules.LabelRunes))
		}
	}
	if a.Text != nil && *a.Text != "" {
		parts = append(parts, fmt.Sprintf("with the note “%s”", *a.Text))
	}
	return strings.Join(parts, "; ")
}

// notAnswering is r's flag when it is active and matched requests only
// by their connection since it last answered one.
func notAnswering(r store.Rule, opts RulesOptions) *RuleFlag {
	ms, ok := opts.Misses[r.ID]
	if !ok || r.State != store.RuleActive || !opts.Now.Before(r.Expires) || !ms.Last.After(r.LastUse) {
		return nil
	}
	f := &RuleFlag{SinceISO: ms.Since.UTC().Format(htmlTime), SinceText: relTime(ms.Since, opts.Now), SinceTitle: exactTime(ms.Since),
		Instance: Marked(rules.Cut(ms.Instance, rules.LabelRunes)), Requests: "1 question",
		URL: withQuery(root(opts.BasePath)+"/", url.Values{"agent": {r.Match.Agent}})}
	if ms.Requests != 1 {
		f.Requests = fmt.Sprintf("%d questions", ms.Requests)
	}
	return f
}

// untilText says when a rule expires, at now: "in 7 h 59 min (1 Mar
// 2026 20:00:00 UTC)", or when it did.
func untilText(t, now time.Time) string {
	if !now.Before(t) {
		return "expired " + relTime(t, now) + " (" + exactTime(t) + ")"
	}
	d := t.Sub(now)
	if d >= 48*time.Hour {
		return fmt.Sprintf("in %d days (%s)", int(d/(24*time.Hour)), exactTime(t))
	}
	return "in " + formatDuration(d.Round(time.Minute)) + " (" + exactTime(t) + ")"
}

// ruleChangeText is a change in words: "Paused by bob", "Resumed by
// alice"; a pause by no one named with a reason is aepforms' own (its
// rate).
func ruleChangeText(c store.RuleChange) string {
	what := map[string]string{store.RuleChangePaused: "Paused", store.RuleChangeResumed: "Resumed", store.RuleChangeDeleted: "Deleted",
		store.RuleChangeCarried: "Set to answer connection “" + rules.Cut(c.Reason, rules.LabelRunes) + "” too"}[c.Change]
	switch {
	case c.By != "":
		return what + " by " + c.By
	case c.Change == store.RuleChangePaused && c.Reason != "":
		return what + " by aepforms"
	}
	return what + " by " + words.answered["no-name"]
}

// ruleChanges are a rule's changes as its row lists them, newest first,
// and how many earlier ones it leaves out, in words.
func ruleChanges(all []store.RuleChange, now time.Time) ([]RuleChangeRow, string) {
	var out []RuleChangeRow
	for i := len(all) - 1; i >= 0 && len(out) < RuleChangesShown; i-- {
		c := all[i]
		out = append(out, RuleChangeRow{Text: ruleChangeText(c), AtISO: c.At.UTC().Format(htmlTime),
			AtText: relTime(c.At, now), AtTitle: exactTime(c.At)})
	}
	switch more := len(all) - len(out); more {
	case 0:
		return out, ""
	case 1:
		return out, "and 1 earlier change"
	default:
		return out, fmt.Sprintf("and %d earlier changes", more)
	}
}

// pausedBy says who paused a rule that was given no reason: its last
// change's operator, when kept.
func pausedBy(changes []store.RuleChange) string {
	if n := len(changes); n > 0 && changes[n-1].Change == store.RuleChangePaused && changes[n-1].By != "" {
		return "Paused by " + changes[n-1].By + "."
	}
	return "Paused by an operator."
}
