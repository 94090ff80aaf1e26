// Package render builds the view models the components render from inbox
// cards (view*.go), and maps a form post back to answer values through the
// request's field specs (answer*.go). Everything here is pure: no I/O, no
// clock (the time is an option), no globals.
package render

import (
	"net/url"
	"strconv"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// Options are what Card needs beyond the card itself. All of it comes from
// the caller: render reads no clock and mints no token.
type Options struct {
	// BasePath is the UI's mount point ("" or "/forms"); a trailing slash is
	// ignored. Every URL in a view honours it.
	BasePath string
	// Now is the time relative times and countdowns are computed against.
	Now time.Time
	// Token is the form token the card's form carries (minted by the caller,
	// one command per token).
	Token string
	// CanSubmit is false when the UI has no control token for the relay
	// (watch-only): no card offers a submit.
	CanSubmit bool
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
}

// Wire names of the answer form (docs/DESIGN.md "The form's wire names").
const (
	NameToken   = "token"  // hidden form token
	NameOption  = "option" // option button: option index
	NameText    = "text"   // free-text reply
	ValueOther  = "other"  // the Other choice's value
	ValueTicked = "on"     // a ticked boolean checkbox's value
)

// FieldName is field i's control name: "f{i}".
func FieldName(i int) string { return "f" + strconv.Itoa(i) }

// OtherName is field i's Other text control name: "f{i}-other".
func OtherName(i int) string { return FieldName(i) + "-other" }

// ChoiceValue is choice j's control value: "{j}".
func ChoiceValue(j int) string { return strconv.Itoa(j) }
