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
// answer form. Problems with it carry these names as their Field.
const (
	NameRule         = "rule"          // ticked: make a rule from this answer
	NameRuleScope    = "rule-scope"    // which questions: exact, prefix, contains, any
	NameRulePrefix   = "rule-prefix"   // the text questions start with (scope prefix)
	NameRuleContains = "rule-contains" // the text questions contain (scope contains)
	NameRuleSession  = "rule-session"  // ticked: only this session's requests
	NameRuleNote     = "rule-note"     // the maker's note
	NameRuleHours    = "rule-hours"    // expiry, in hours
	// NameRulePreview is the "Preview" button: the post sends nothing
	// and the card comes back with what each scope would have answered.
	NameRulePreview = "rule-preview"
)

// Rule scopes as posted (store.Scope* by value).
const (
	ScopeExact    = "exact"
	ScopePrefix   = "prefix"
	ScopeContains = "contains"
	ScopeAny      = "any"
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
	Open     bool   // shown open (kept input, a preview, or a problem with it)
	Make     bool   // "make a rule" ticked
	Agent    string // the card's agent
	Session  string // the card's session, short
	BySess   bool
	// Question is the question as the card shows it (cut for the
	// maker), which "exactly this question" answers.
	Question string
	// Scope is the scope chosen (ScopeExact unless widened); Prefix and
	// Contains the texts typed (pre-filled from the question's command).
	Scope, Prefix, Contains string
	// Permission: a wider scope never answers a chained command; the
	// hint says so.
	Permission bool
	// Note and Hours are the inputs as kept.
	Note, Hours string
	// HoursError, TextError, MakeError are problems with the rule part
	// (TextError: the prefix or contains text; MakeError: with the rule
	// as a whole, e.g. a field left open).
	HoursError, TextError, MakeError string
	// Preview is what each scope would have answered, after "Preview".
	Preview *RulePreview
}

// RulePreview is what each scope would have answered of History's
// recent requests, before the rule is saved.
type RulePreview struct {
	// Window says which requests were looked at ("the last 30 days").
	Window string
	// Choices is each scope's count, narrow to wide.
	Choices []PreviewChoice
	// Beyond names up to three requests the chosen scope would have
	// answered (the widest, when exact is chosen) that exactly this
	// question would not.
	Beyond      []PreviewEntry
	BeyondTitle string
	// Note says what the preview could not look at.
	Note string
}

// PreviewChoice is one scope's count.
type PreviewChoice struct {
	Scope, Words string
	Count        int
	Chosen       bool
}

// PreviewEntry is one request History holds.
type PreviewEntry struct {
	Question string
	URL      string // its History entry
}

// RuleSpec is a parsed rule part.
type RuleSpec struct {
	Make bool
	// Scope is ScopeExact, ScopePrefix, ScopeContains or ScopeAny; Text
	// is the prefix or contains text of the scope chosen.
	Scope, Text string
	Session     bool
	Note        string
	Expires     time.Duration
	// Preview: the post asks what each scope would answer, and sends
	// nothing.
	Preview bool
}

// ParseRule reads the rule part of post; problems name its controls.
// Nothing ticked is no rule and no problem.
func ParseRule(post url.Values) (RuleSpec, []aep.Problem) {
	s := RuleSpec{Make: post.Get(NameRule) != "", Preview: post.Get(NameRulePreview) != ""}
	if !s.Make && !s.Preview {
		return s, nil
	}
	s.Session = post.Get(NameRuleSession) != ""
	s.Note = strings.TrimSpace(post.Get(NameRuleNote))
	var probs []aep.Problem
	s.Scope = post.Get(NameRuleScope)
	switch s.Scope {
	case "", ScopeExact:
		s.Scope = ScopeExact
	case ScopePrefix, ScopeContains:
		name, what := NameRulePrefix, "start with"
		if s.Scope == ScopeContains {
			name, what = NameRuleContains, "contain"
		}
		s.Text = strings.TrimSpace(post.Get(name))
		switch {
		case s.Text == "":
			probs = append(probs, aep.Problem{Field: name, Message: "Type the text the questions must " + what + ", or choose “Exactly this question”."})
		case len(s.Text) > RuleTextMax || !utf8.ValidString(s.Text):
			probs = append(probs, aep.Problem{Field: name, Message: "Keep the text to at most 500 bytes."})
		}
	case ScopeAny:
	default:
		probs = append(probs, aep.Problem{Field: NameRuleScope, Message: "Choose which questions the rule answers."})
	}
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
	if len(s.Note) > RuleTextMax || !utf8.ValidString(s.Note) {
		s.Note = ""
		probs = append(probs, aep.Problem{Field: NameRule, Message: "Keep the rule's note to at most 500 bytes."})
	}
	return s, probs
}

// IsRuleProblem reports whether p is a problem with the rule part.
func IsRuleProblem(p aep.Problem) bool { return strings.HasPrefix(p.Field, NameRule) }
