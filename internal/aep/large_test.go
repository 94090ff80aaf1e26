package aep

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeEventsStayLinear guards against quadratic work on hostile
// events: 200 000 extension members (about 4 MB, under a relay's 16 MiB
// body limit). Linear work takes about a second even under the race
// detector on a loaded machine; a pairwise duplicate check would need some
// 2*10^10 comparisons, far beyond the generous bound.
func TestLargeEventsStayLinear(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString(`{"aep":"0.1","id":"E","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a","session":"s","seq":0`)
	const n = 200000
	for i := range n {
		fmt.Fprintf(&b, `,"x%d":%d`, i, i)
	}
	b.WriteString(`,"x1":"again"}`)
	start := time.Now()
	e, err := Decode(b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, 8+n, len(e.Members()), "distinct member names")
	errs := validationErrors(t, ValidateEnvelope(e))
	require.Equal(t, 1, len(errs), "one failure: the repeated x1")
	assert.Equal(t, "x1", errs[0].Attr)
	assert.Less(t, time.Since(start), 30*time.Second, "decode + validate of %d members", n)
}
