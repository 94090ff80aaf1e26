package store

import (
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// Rule states. A deleted rule is kept (so History can still name the
// rule that answered) but never listed or applied again.
const (
	RuleActive  = "active"
	RulePaused  = "paused"
	RuleDeleted = "deleted"
)

// RuleMatch is what a request must be for a rule to answer it: its kind,
// the same option set (by id and label, in order), the same fields (by
// id, type and label) when it has any, and, when set, its agent, its
// session and text its prompt contains.
type RuleMatch struct {
	Kind           string          `json:"kind"`
	Options        []aep.Option    `json:"options,omitempty"`
	Fields         []aep.FieldSpec `json:"fields,omitempty"`
	Agent          string          `json:"agent,omitempty"`
	Session        string          `json:"session,omitempty"`
	PromptContains string          `json:"prompt_contains,omitempty"`
}

// Rule is a standing answer: requests that match Match are answered with
// Answer, on behalf of Maker, until Expires, unless paused or deleted.
type Rule struct {
	ID string
	// Name is how the page and History call it (made from its answer).
	Name   string
	Match  RuleMatch
	Answer aep.Answer
	// Note is the maker's why, shown on the Rules page; it is not sent
	// (the note typed for the agent, if any, is Answer.Text).
	Note    string
	Maker   string
	Created time.Time
	Expires time.Time
	// State is RuleActive, RulePaused or RuleDeleted; Reason says why a
	// rule was paused, in the operator's words, and StateAt when.
	State   string
	Reason  string
	StateAt time.Time
	// Uses and LastUse are filled by Rules: how many requests the rule
	// answered, and when last (zero for never).
	Uses    int
	LastUse time.Time
}

// RuleUse is one request a rule answered.
type RuleUse struct {
	Rule      string
	Card      string
	Source    string
	Session   string
	RequestID string
	CommandID string
	At        time.Time
}

// RuleMaxError refuses a new rule: Max rules that may still answer
// (active or paused, not expired) are kept already.
type RuleMaxError struct{ Max int }

func (e *RuleMaxError) Error() string {
	return fmt.Sprintf("at most %d rules are kept at once", e.Max)
}
