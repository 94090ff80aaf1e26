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

// Scopes: how much of a request's question a rule compares, narrow to
// wide. A rule made before rules were scoped to the question has none
// (ScopeUnscoped): it compares PromptContains, when set, and nothing else
// of the question, and was paused when the journal was upgraded
// (ReasonUnscoped).
const (
	// ScopeExact answers only the question as the operator read it: the
	// card's visible text (RuleMatch.Question), whitespace aside.
	ScopeExact = "exact"
	// ScopePrefix answers questions whose visible text starts with
	// RuleMatch.Text.
	ScopePrefix = "prefix"
	// ScopeContains answers questions whose visible text contains
	// RuleMatch.Text.
	ScopeContains = "contains"
	// ScopeAny answers any question of the rule's shape (kind, options,
	// fields, tool) from its agent.
	ScopeAny = "any"
	// ScopeUnscoped is a rule made before scopes.
	ScopeUnscoped = ""
)

// ReasonUnscoped is why a rule made before rules were scoped to the
// question was paused by the journal's upgrade: written by the
// migration in both backends, shown on the Rules page.
const ReasonUnscoped = "Made before rules were scoped to the question: review and resume."

// RuleMatch is what a request must be for a rule to answer it: its kind,
// the same option set (by id and label, in order), the same fields (by
// id, type and label) when it has any, its agent (and the agent's
// connection, Instance, when the relay named it), the tool it asks for,
// its question within Scope, and, when set, its session.
type RuleMatch struct {
	Kind    string          `json:"kind"`
	Options []aep.Option    `json:"options,omitempty"`
	Fields  []aep.FieldSpec `json:"fields,omitempty"`
	Agent   string          `json:"agent,omitempty"`
	Session string          `json:"session,omitempty"`
	// PromptContains is an unscoped rule's "question contains" text
	// (case-insensitive, of the raw prompt); never set on a scoped one.
	PromptContains string `json:"prompt_contains,omitempty"`
	// Scope is ScopeExact, ScopePrefix, ScopeContains or ScopeAny;
	// ScopeUnscoped for a rule made before scopes.
	Scope string `json:"scope,omitempty"`
	// Question is the visible text of the question the rule was made
	// from (rules.Visible): what ScopeExact compares, and what the Rules
	// page shows.
	Question string `json:"question,omitempty"`
	// Text is what ScopePrefix and ScopeContains look for in a
	// question's visible text (case-sensitive).
	Text string `json:"text,omitempty"`
	// Tool is the tool the request asked about (the tool.requested
	// event its cause names), "" when it named none: a rule answers only
	// requests naming the same tool, or none when it has none.
	Tool string `json:"tool,omitempty"`
	// Instance is the instance the relay's roster named for the
	// connection that claimed the request's session (the agent's hello),
	// "" when the roster named none: when set, a request's session must
	// be claimed by a connection of the same instance.
	Instance string `json:"instance,omitempty"`
	// Carried are the other connections (instances) an operator let the
	// rule answer too, oldest first (RuleBook.CarryRule): the agent's
	// own connection after a restart, seen on a card the rule matched in
	// all else. At most MaxCarried are kept.
	Carried []string `json:"carried,omitempty"`
}

// MaxCarried is how many connections a rule is carried over to at most
// (RuleMatch.Carried): past it the oldest carried one is forgotten.
const MaxCarried = 16

// Answers reports whether a rule matching m answers requests whose
// session is claimed by a connection of instance: any when m names
// none, else its own or one it was carried over to.
func (m RuleMatch) Answers(instance string) bool {
	if m.Instance == "" {
		return true
	}
	if instance == "" {
		return false
	}
	if instance == m.Instance {
		return true
	}
	for _, c := range m.Carried {
		if c == instance {
			return true
		}
	}
	return false
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
	// Card is the card the rule was made from ("" for a rule made
	// before this was kept): its page says the rule was made.
	Card string
	// State is RuleActive, RulePaused or RuleDeleted; Reason says why a
	// rule was paused, in the operator's words, and StateAt when.
	State   string
	Reason  string
	StateAt time.Time
	// Uses and LastUse are filled by Rules: how many requests the rule
	// answered, and when last (zero for never).
	Uses    int
	LastUse time.Time
	// Changes are its pauses, resumes and delete, oldest first: who and
	// when (filled by Rules and Rule; none for changes made before they
	// were kept).
	Changes []RuleChange
}

// Rule changes: what a RuleChange did.
const (
	RuleChangePaused  = "paused"
	RuleChangeResumed = "resumed"
	RuleChangeDeleted = "deleted"
	// RuleChangeCarried let the rule answer another connection of its
	// agent too (RuleChange.Instance).
	RuleChangeCarried = "carried"
)

// RuleChange is one pause, resume, delete or carry-over of a rule.
type RuleChange struct {
	// Change is RuleChangePaused, RuleChangeResumed, RuleChangeDeleted
	// or RuleChangeCarried (Reason is then the instance of the connection
	// carried to).
	Change string
	// By is the operator who made it; "" for aepforms itself (a rule
	// pausing itself at its rate) or an operator who gave no name.
	By     string
	Reason string
	At     time.Time
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

// RuleUseRecord is one request a rule answered, as the Rules page lists
// it: the use and the question its answer's History entry holds.
type RuleUseRecord struct {
	RuleUse
	Question string
}

// RuleMaxError refuses a new rule: Max rules that may still answer
// (active or paused, not expired) are kept already.
type RuleMaxError struct{ Max int }

func (e *RuleMaxError) Error() string {
	return fmt.Sprintf("at most %d rules are kept at once", e.Max)
}
