package aep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
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
