package aeptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// fixtureDir holds the AEP conformance corpora, vendored byte-identical
// (testdata/aep/PROVENANCE.md).
var fixtureDir = filepath.Join("..", "..", "testdata", "aep", "fixtures")

// readFixture reads a fixture file and decodes it into v (numbers as json.Number).
func readFixture(t testing.TB, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, rel))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(v), "decode %s", rel)
}

// goldenLines returns the golden corpus, one raw event per line.
func goldenLines(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "golden", "golden.jsonl"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		out = append(out, slices.Clone(line))
	}
	require.NoError(t, sc.Err())
	return out
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

// requireNames asserts that a corpus holds exactly the named cases, so a
// changed fixture fails loudly instead of silently testing less.
func requireNames(t *testing.T, corpus string, got, want []string) {
	t.Helper()
	require.ElementsMatch(t, want, got, "%s: case names changed (got vs want)", corpus)
	seen := map[string]bool{}
	for _, n := range got {
		require.False(t, seen[n], "%s: case name %q repeats", corpus, n)
		seen[n] = true
	}
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
