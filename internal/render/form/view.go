package form

// View is a card's form: its controls and how it is submitted.
type View struct {
	Action string // POST URL: {base}/cards/{id}/answer
	Token  string // hidden form token
	// Answerable is true when a submit is offered; when false the controls
	// are shown disabled (watch-only, sending, informational, settled).
	Answerable bool
	Fields     []Field
	Options    []Option // permission, review, input with options
	// OptionsLookAlike warns that two or more options look alike (the
	// view sets it); empty when none do.
	OptionsLookAlike string
	Reply            *Reply // free-text reply: input, form without fields, unknown kind
	// SubmitLabel is the primary button's label ("Send answer"); empty when
	// the only submits are option buttons.
	SubmitLabel string
	// Kept is true when the controls hold input kept on the server (a
	// refused post, a submission): the browser must not restore a draft over it.
	Kept bool
	// HoldEnter is true when Enter in a text box must not send the form:
	// it has more than one control to fill, or option buttons (Enter
	// would press the first). The form then starts with a disabled default
	// button; Ctrl/Cmd+Enter or the button sends it.
	HoldEnter bool
	// Rule is "Answer like this from now on…" (the view sets it); nil
	// when no rule can be made here.
	Rule *RuleMaker
}

// ErrorLink is one line of an error summary: the message and the id of
// the control it jumps to.
type ErrorLink struct {
	Href    string // "#{control id}"; empty for a problem with the whole answer
	Message string
	// Field names the field the problem is with ("Service name", or
	// "Field f_1" when labels are placeholders), so the summary line reads
	// on its own; empty for a whole-answer problem or when the message
	// already names the field.
	Field string
}

// Option is one option of a permission, review or input request.
type Option struct {
	Index       int
	Value       string // the option button's value: the option index
	Label       string
	AgentID     string // the option id, shown when the label is a placeholder
	Placeholder bool
	// Style is "primary" (the first non-refusing option, except on a
	// permission card, where none is put forward), "secondary" or "deny"
	// (the refusing option: never the default).
	Style string
	// Refusing marks the one option that reads as a refusal (only when
	// exactly one does). It changes the looks, never what is sent.
	Refusing bool
	// Rule is set on a card that makes rules: the label is drawn as
	// Head and Once (Label = Head + Once, Once a trailing " once"), so
	// with the rule box ticked the button reads what it then does,
	// "Allow, and always for this question" (CSS: Once hidden, the
	// scope's words after Head), its text unchanged.
	Rule       bool
	Head, Once string
}

// Reply is a free-text reply control.
type Reply struct {
	Name, ID    string
	Label       string
	Required    bool
	Value       string
	Hint        string
	HintID      string
	Error       string
	ErrorID     string
	DescribedBy string
	Invalid     bool
	Disabled    bool
	// Note is true when the text is a note to the options (permission,
	// review): shown behind "Add a note", sent beside the option pressed
	// or alone with the note-only button. Open shows it unfolded (a kept
	// note, a problem). Summary and Only are the disclosure's and the
	// note-only button's words, OnlyHint what sending it alone means (the
	// view sets them from words.go).
	Note                    bool
	Open                    bool
	Summary, Only, OnlyHint string
	OnlyHintID              string
}
