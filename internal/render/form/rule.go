package form

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
)

// Wire names of "Answer like this from now on…", the rule part of an
// answer form (issue 26). Problems with it carry these names as their
// Field.
const (
	NameRule         = "rule"          // ticked: make a rule from this answer
	NameRuleAgent    = "rule-agent"    // ticked: only this agent's requests
	NameRuleSession  = "rule-session"  // ticked: only this session's requests
	NameRuleContains = "rule-contains" // text the prompt must contain
	NameRuleNote     = "rule-note"     // the maker's note
	NameRuleHours    = "rule-hours"    // expiry, in hours
)

// Rule expiry bounds, in hours: 8 by default, at most 30 days.
const (
	RuleHoursDefault = 8
	RuleHoursMax     = 30 * 24
)

// RuleTextMax bounds the rule's texts (prompt text, note), in bytes.
const RuleTextMax = 500

// RuleMaker is the rule part of a card's answer form: a disclosure that
// makes a standing answer from the answer being sent.
type RuleMaker struct {
	ID string // element id prefix
	// RulesURL is the Rules page, where every rule is seen and stopped.
	RulesURL string
	Open     bool   // shown open (kept input, or a problem with it)
	Make     bool   // "make a rule" ticked
	Agent    string // the card's agent ("" when none: no agent scope offered)
	ByAgent  bool
	Session  string // the card's session, short
	BySess   bool
	// Contains, Note and Hours are the inputs as kept.
	Contains, Note, Hours string
	// HoursError, ContainsError, MakeError are problems with the rule
	// part (MakeError: with the rule as a whole, e.g. a field left open).
	HoursError, ContainsError, MakeError string
}

// RuleSpec is a parsed rule part.
type RuleSpec struct {
	Make           bool
	Agent, Session bool
	Contains, Note string
	Expires        time.Duration
}

// ParseRule reads the rule part of post; problems name its controls.
// Nothing ticked is no rule and no problem.
func ParseRule(post url.Values) (RuleSpec, []aep.Problem) {
	s := RuleSpec{Make: post.Get(NameRule) != ""}
	if !s.Make {
		return s, nil
	}
	s.Agent, s.Session = post.Get(NameRuleAgent) != "", post.Get(NameRuleSession) != ""
	s.Contains, s.Note = strings.TrimSpace(post.Get(NameRuleContains)), strings.TrimSpace(post.Get(NameRuleNote))
	var probs []aep.Problem
	hours := strings.TrimSpace(post.Get(NameRuleHours))
	if hours == "" {
		hours = strconv.Itoa(RuleHoursDefault)
	}
	h, err := strconv.Atoi(hours)
	switch {
	case err != nil:
		probs = append(probs, aep.Problem{Field: NameRuleHours, Message: "Enter the expiry as a whole number of hours, like 8."})
	case h < 1 || h > RuleHoursMax:
		probs = append(probs, aep.Problem{Field: NameRuleHours, Message: "A rule lasts from 1 hour to 720 hours (30 days)."})
	default:
		s.Expires = time.Duration(h) * time.Hour
	}
	if len(s.Contains) > RuleTextMax || !utf8.ValidString(s.Contains) {
		probs = append(probs, aep.Problem{Field: NameRuleContains, Message: "Keep the text to at most 500 bytes."})
	}
	if len(s.Note) > RuleTextMax || !utf8.ValidString(s.Note) {
		s.Note = ""
		probs = append(probs, aep.Problem{Field: NameRule, Message: "Keep the rule's note to at most 500 bytes."})
	}
	return s, probs
}

// IsRuleProblem reports whether p is a problem with the rule part.
func IsRuleProblem(p aep.Problem) bool { return strings.HasPrefix(p.Field, NameRule) }
