package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/store"
)

// The journal finds the answers rules sent by the prefix their operator
// name starts with (History's rule filter, the header's count): the
// same prefix a rule's answers carry.
func TestTheJournalKnowsTheRulesPrefix(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ByPrefix, store.RuleByPrefix)
	id, ok := RuleOf(store.RuleByPrefix + "R1")
	assert.True(t, ok)
	assert.Equal(t, "R1", id)
}
