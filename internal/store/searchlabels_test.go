package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// History's search finds an answer by any word its card showed: option
// and choice labels, field labels and Other text, not only the hidden ids
// the agent receives.
func TestSearchTextHoldsTheWordsTheCardShowed(t *testing.T) {
	t.Parallel()
	form := inbox.Submission{
		Question: "Where and when should the release go?",
		Fields: []aep.FieldSpec{
			{ID: "branch", Type: aep.FieldSelect, Label: "Branch", Choices: []aep.Choice{{ID: "release", Label: "release/2.4"}, {ID: "main", Label: "main"}}},
			{ID: "regions", Type: aep.FieldSelect, Multi: true, Other: true, Label: "Regions",
				Choices: []aep.Choice{{ID: "1", Label: "eu-west"}, {ID: "2", Label: "us-east"}}},
			{ID: "window", Type: aep.FieldSelect, Label: "Window", Choices: []aep.Choice{{ID: "2200", Label: "Tonight 22:00"}}},
		},
		Answer: aep.Answer{Values: aep.Values{"branch": "release", "regions": []any{"1", "eu-central"}, "window": "2200"}},
	}
	perm := inbox.Submission{Question: "Run make release?", Kind: aep.KindPermission,
		Options: []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}, Answer: aep.Answer{Option: "allow"}}

	for _, c := range []struct {
		s    inbox.Submission
		find []string
		not  []string
	}{
		{form, []string{"release/2.4", "eu-west", "22:00", "eu-central", "regions", "2200"}, []string{"us-east", "main"}},
		{perm, []string{"allow once", "allow"}, []string{"deny"}},
	} {
		text := SearchText(c.s)
		for _, w := range c.find {
			assert.True(t, strings.Contains(text, Fold(w)), "%q not found in %q", w, text)
		}
		for _, w := range c.not {
			assert.False(t, strings.Contains(text, Fold(w)), "%q (not the answer) found in %q", w, text)
		}
	}
}
