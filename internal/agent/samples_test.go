package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aepforms/aepforms/e2e/samples"
)

// TestDeployScenarioAsksTheSharedSample: the deploy scenario asks exactly
// samples.DeployForm, so tests that use the sample test what the demo
// agent sends.
func TestDeployScenarioAsksTheSharedSample(t *testing.T) {
	t.Parallel()
	assert.Equal(t, samples.DeployForm(), deployForm("demo").req)
}
