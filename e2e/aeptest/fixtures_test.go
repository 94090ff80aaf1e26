package aeptest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/fixtures"
	"github.com/aepforms/aepforms/internal/aep"
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

// goldenEvents returns the golden corpus decoded.
func goldenEvents(t testing.TB) []*aep.Event {
	t.Helper()
	var out []*aep.Event
	for _, line := range goldenLines(t) {
		e, err := aep.Decode(line)
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// requireNames asserts a corpus holds exactly the named cases (fixtures.RequireNames).
func requireNames(t *testing.T, corpus string, got, want []string) {
	t.Helper()
	fixtures.RequireNames(t, corpus, got, want)
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
