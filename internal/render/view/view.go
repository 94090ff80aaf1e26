// Package view builds the view models the templ components render from
// inbox cards: the card with its provenance, prompt, state line and notes,
// the page with its groups and banners, the sign-in page. The form itself
// comes from package form. Everything here is pure: no I/O, no clock (the
// time is an option), no globals; asset URLs come from the caller.
package view

import (
	"net/url"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// Options are what Card needs beyond the card itself. All of it comes from
// the caller: render reads no clock and mints no token.
type Options struct {
	// BasePath is the UI's mount point as web.CleanBasePath makes it ("/"
	// or "/forms/"). Every URL in a view honours it.
	BasePath string
	// Now is the time relative times and countdowns are computed against.
	Now time.Time
	// Token is the form token the card's form carries (minted by the caller,
	// one command per token).
	Token string
	// Viewer is who the card is drawn for: its verdict's input, as the
	// wiring made it (the zero Viewer sends answers).
	Viewer inbox.Viewer
	// Reachable says whether the card's agent is connected for answers.
	Reachable inbox.Reach
	// Input is the operator's input to keep in the form (a refused post).
	// Nil means the input kept with the card's submission, if any.
	Input url.Values
	// Problems are the refused post's problems (Field = the agent's field
	// id, "" = the whole answer); they become the error summary and the
	// per-field messages.
	Problems []aep.Problem
	// Panel renders for the Mission Control panel (compact).
	Panel bool
	// PromptBytes is how much of a prompt the card shows; the rest is
	// behind "Show all". 0 is DefaultPromptBytes (16 KiB).
	PromptBytes int
	// NoHistory is true when the UI keeps no answer journal (History is
	// off): a settled card this UI answered links to no history entry.
	NoHistory bool
	// Prompts keeps prompts read as Markdown, so each is read once however
	// often it is drawn; nil reads every time.
	Prompts *markdown.Cache
	// Operator is the name of the operator the card is drawn for (""
	// when none): an answer they gave reads "Answered by you (name)".
	Operator string
	// Rule names the rule behind an answer sent by one ("rule:{id}");
	// nil: no rules.
	Rule RuleLookup
	// Rules is true when this UI makes rules: answerable cards offer
	// "Answer like this from now on…".
	Rules bool
	// Preview is what the rule being made would have answered (a
	// "Preview" post), shown in the rule maker with Input kept.
	Preview *form.RulePreview
	// RuleMade returns the rule made from card id's answer, if any: a
	// settled card says so. nil: none.
	RuleMade func(card string) (RuleMade, bool)
	// Assignees are the operators the card's question may be assigned to
	// by the operator it is drawn for (none: no "Assign to").
	Assignees []string
	// AssignTeams are the teams (the routes file's) the card's question
	// may be assigned to by the operator it is drawn for.
	AssignTeams []string
	// RulesVersion is the rules' version Rule and RuleMade read (it moves
	// on with every rule change): the drawn card caches key on it.
	RulesVersion uint64
}

// RuleMade is the rule an operator made from a card's answer, as the
// card names it: its name, its scope in words, and where it is.
type RuleMade struct {
	Name, Scope, URL string
	// Gone is true when it was deleted since.
	Gone bool
}
