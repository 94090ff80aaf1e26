package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The relay's cap is lowered to fit beside the UI's whole cap and the
// reserve, never the UI's.
func TestFitRelayCapKeepsTheUIsBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		soft               uint64
		ui, relay, wantCap int
	}{
		{"room for both", 20000, 512, 1024, 1024},
		{"a low limit lowers the relay's", 1024, 512, 1024, 1024 - 512 - fdReserve},
		{"never below 16", 256, 512, 1024, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantCap, fitRelayCap(tc.soft, tc.ui, tc.relay))
		})
	}
}
