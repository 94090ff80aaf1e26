package view

import (
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// "Answer all" control names: the snapshot (when the batch page was
// drawn: questions that arrived later are left out), the filter the
// page showed, and the operator's confirmation of the count.
const (
	BatchNameAll       = "all"
	BatchNameAllFilter = "all-filter"
	BatchNameConfirm   = "confirm"
)

// BatchAllSnapshot is the value of a group's "Answer all" button: the
// time the page was drawn, which binds the selection to the questions
// waiting then.
func BatchAllSnapshot(now time.Time) string { return now.UTC().Format(time.RFC3339Nano) }

// BatchAllFilter is the filter a batch page shows, as the "Answer all"
// post carries it (agent, session, kind).
func BatchAllFilter(q inbox.Query) string {
	v := url.Values{}
	for k, s := range map[string]string{"agent": q.Agent, "session": q.Session, "kind": q.Kind} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// BatchAllQuery reads BatchAllFilter back.
func BatchAllQuery(s string) inbox.Query {
	v, _ := url.ParseQuery(s)
	return inbox.Query{Agent: v.Get("agent"), Session: v.Get("session"), Kind: v.Get("kind")}
}

// BatchAllSplit splits the cards of a shape into those waiting at the
// snapshot (the ones "Answer all" stands for) and the number that
// arrived after it (left out: the operator has not seen them counted).
func BatchAllSplit(cards []inbox.Card, snapshot time.Time) (chosen []inbox.Card, later int) {
	for _, c := range cards {
		if c.ReceivedAt.After(snapshot) {
			later++
			continue
		}
		chosen = append(chosen, c)
	}
	return chosen, later
}

// BatchConfirmView is the page that asks before one answer goes to every
// question of a shape the batch page counted: how many, the answer as it
// will be recorded, every question whole, the ones left out, and
// the same post again with the confirmation.
type BatchConfirmView struct {
	Page    PageView
	Heading string // "Send this answer to 1 234 questions?"
	Count   int
	Values  []RecordedValue
	// Questions are every question the answer goes to, each shown as its
	// card shows it (heading, the rest quoted within the prompt budget,
	// "Show all"): a confirmation never answers text the operator was
	// not shown.
	Questions []ConfirmQuestion
	LeftOut   string // the questions that arrived since ("" when none)
	Action    string
	Hidden    []HiddenField
	Send      string // the button: "Send to 1 234 questions"
	BackURL   string
}

// HiddenField is one name and value a form posts again.
type HiddenField struct{ Name, Value string }

// BatchConfirm builds the confirmation of an "Answer all" post: cards
// are the questions it stands for (the first is the form's), answer the
// answer parsed from post, later the questions left out.
func BatchConfirm(cards []inbox.Card, answer aep.Answer, post url.Values, later int, opts BatchOptions) BatchConfirmView {
	base := root(opts.BasePath)
	n := len(cards)
	v := BatchConfirmView{
		Page:    subPage(batchWords["confirm-title"], base, opts.Assets, opts.Theme, opts.SignedIn, opts.Operator),
		Heading: strings.ReplaceAll(batchWords["confirm-heading"], "{n}", questionsWord(n)),
		Count:   n,
		Values:  recordedValues(cards[0].Request, answer, aep.CaptureFull, false),
		Action:  base + "/batch/answer",
		Send:    strings.ReplaceAll(batchWords["confirm-send"], "{n}", questionsWord(n)),
		BackURL: BatchesLink(base, opts.Filter),
	}
	for _, c := range cards {
		_, from := groupOf(c)
		v.Questions = append(v.Questions, ConfirmQuestion{ID: string(c.ID), From: Marked(from),
			Question: QuestionOf(c, Options{BasePath: opts.BasePath, Prompts: opts.Prompts, PromptBytes: opts.PromptBytes})})
	}
	if later > 0 {
		v.LeftOut = strings.ReplaceAll(batchWords["confirm-later"], "{n}", questionsWord(later))
	}
	names := make([]string, 0, len(post))
	for k := range post {
		if k != BatchNameCard && k != BatchNameConfirm {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		for _, s := range post[k] {
			v.Hidden = append(v.Hidden, HiddenField{Name: k, Value: s})
		}
	}
	return v
}

// ConfirmQuestion is one question an "Answer all" goes to, whole.
type ConfirmQuestion struct {
	ID, From string
	Question Question
}

// questionsWord is "1 question", "1 234 questions".
func questionsWord(n int) string {
	if n == 1 {
		return "1 question"
	}
	return Count(n) + " questions"
}

// BatchAllLater says, on an "Answer all"'s result, the questions that
// arrived after the batch page was drawn and were left out.
func BatchAllLater(n int) string {
	return strings.ReplaceAll(batchWords["all-later"], "{n}", questionsWord(n))
}
