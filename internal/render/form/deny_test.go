package form

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/internal/aep"
)

func TestIsDeny(t *testing.T) {
	t.Parallel()
	cases := []struct {
		o    aep.Option
		deny bool
	}{
		{aep.Option{ID: "deny", Label: "Deny"}, true},
		{aep.Option{ID: "reject", Label: "Reject"}, true},
		{aep.Option{ID: "n", Label: "No"}, true},
		{aep.Option{ID: "deny_always", Label: "Never allow"}, true},
		{aep.Option{ID: "x", Label: "Reject changes"}, true},
		{aep.Option{ID: "allow", Label: "Allow"}, false},
		{aep.Option{ID: "notify", Label: "Notify the team"}, false},
		{aep.Option{ID: "nothing", Label: "Nothing to add"}, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.deny, isDeny(tc.o), "isDeny(%+v)", tc.o)
	}
}
