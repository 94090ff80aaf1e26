package form

import (
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// OtherReading is Other text that ParseAnswer sent as a choice: the text
// equals the choice's label (ignoring case and surrounding space), so the
// agent gets the choice's id, and the card says so.
type OtherReading struct {
	Field  string     // the agent's field id
	Text   string     // the Other text as typed
	Choice aep.Choice // the choice it was sent as
}

// otherMatch is how a select's Other text relates to its choices.
type otherMatch struct {
	label   bool         // the text is the label of choices[choice]: send that choice
	choice  int          // the choice the text names
	problem *aep.Problem // the text cannot be sent (Field unset)
}

// readOther matches Other text against the choices of f, so that Other
// text never becomes a different choice silently. The operator sees
// labels, the agent reads ids:
//
//   - text equal to one choice's label (ignoring case and surrounding
//     space; a choice without a label shows its id) is that choice;
//   - text equal to the labels of several choices is refused: which one
//     is meant cannot be told;
//   - text equal to a choice's id (ignoring case and surrounding space),
//     where that choice shows a different label, is refused: the agent
//     would read it as a choice the operator never saw named so.
//
// At capture metadata the labels are placeholders equal to the ids, and
// the same rules hold: the text is then the choice.
func readOther(f aep.FieldSpec, text string) otherMatch {
	t := strings.TrimSpace(text)
	m := otherMatch{choice: -1}
	for j, c := range f.Choices {
		if !strings.EqualFold(t, strings.TrimSpace(choiceInMessage(c))) {
			continue
		}
		if m.label {
			return otherMatch{choice: -1, problem: &aep.Problem{
				Code:    CodeOtherAmbiguous,
				Message: quoteInMessage(text) + " is the name of more than one choice; choose one of them above",
			}}
		}
		m.label, m.choice = true, j
	}
	if m.label {
		return m
	}
	for j, c := range f.Choices {
		if strings.EqualFold(t, c.ID) {
			return otherMatch{choice: j, problem: &aep.Problem{
				Code:    CodeOtherIsChoice,
				Message: quoteInMessage(text) + " would be read as the choice " + quoteInMessage(choiceInMessage(c)) + "; choose it above, or type something else",
			}}
		}
	}
	return m
}
