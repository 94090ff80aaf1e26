// Package form is the answer form's wire contract: the control names a
// card's form posts, the field views the components render from a
// request's field specs, and the mapping of a post back to answer.values
// (with the messages of what the operator must fix). The templ components
// and the page script use these names from here (the script reads them
// from the markup); nothing else spells them. Everything here is pure.
package form

import "strconv"

// Wire names of the answer form (docs/DESIGN.md "The form's wire names").
const (
	NameToken  = "token"  // hidden form token
	NameOption = "option" // option button: option index
	NameText   = "text"   // free-text reply
	// NameReplaces is the hidden field of a form shown under "Answer
	// differently": the command id of the owed answer it replaces.
	NameReplaces = "replaces"
	// NameCommand is the hidden field of "Send again": the owed
	// answer's command id.
	NameCommand = "command"
	// NameUndo is the hidden field of "Undo", once per answer taken
	// back: "{card} {command}".
	NameUndo = "undo"
	// NameUndoBatch is the hidden field of an Undo of a whole batch,
	// once per batch taken back: its id (the batch form's token).
	NameUndoBatch = "undo-batch"
	ValueOther    = "other" // the Other choice's value
)

// Wire names of the sign-in form.
const (
	NameSecret   = "token" // the operator secret
	NameOperator = "name"  // the operator's name (optional)
)

// FieldName is field i's control name: "f{i}".
func FieldName(i int) string { return "f" + strconv.Itoa(i) }

// OtherName is field i's Other text control name: "f{i}-other".
func OtherName(i int) string { return FieldName(i) + "-other" }

// ChoiceValue is choice j's control value: "{j}".
func ChoiceValue(j int) string { return strconv.Itoa(j) }
