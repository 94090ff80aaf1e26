package aep

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/fixtures"
)

// readFixture reads a corpus file (fixtures.Read).
func readFixture(t testing.TB, rel string, v any) {
	t.Helper()
	fixtures.Read(t, rel, v)
}

// goldenLines returns the golden corpus, one raw event per line.
func goldenLines(t testing.TB) [][]byte {
	t.Helper()
	return fixtures.GoldenLines(t)
}

// requireNames asserts a corpus holds exactly the named cases (fixtures.RequireNames).
func requireNames(t *testing.T, corpus string, got, want []string) {
	t.Helper()
	fixtures.RequireNames(t, corpus, got, want)
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w), "want is not JSON: %s", want)
	require.NoError(t, json.Unmarshal(got, &g), "got is not JSON: %s", got)
	require.Equal(t, w, g, msgAndArgs...)
}

type invalidCorpus struct {
	Cases []struct {
		Name   string            `json:"name"`
		Rule   string            `json:"rule"`
		Event  json.RawMessage   `json:"event"`
		Events []json.RawMessage `json:"events"`
	} `json:"cases"`
}

// validationErrors flattens a joined error into its *ValidationErrors and
// fails when any part is of another kind.
func validationErrors(t *testing.T, err error) []*ValidationError {
	t.Helper()
	var out []*ValidationError
	for _, part := range unjoin(err) {
		var ve *ValidationError
		require.True(t, errors.As(part, &ve), "part %v is a *ValidationError", part)
		out = append(out, ve)
	}
	return out
}
