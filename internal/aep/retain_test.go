package aep

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeAttributesDoNotKeepTheEvent: an attribute kept after its
// event is gone (a dedupe window keeps ids, a share counts agents by
// name) holds only its own bytes, not the whole event: 8 MB prompts must
// not stay alive through their ids.
func TestDecodeAttributesDoNotKeepTheEvent(t *testing.T) {
	const size = 8 << 20
	big := strings.Repeat("x", size)
	line := []byte(`{"aep":"0.1","id":"r1","type":"attention.requested","time":"2026-07-03T10:00:00Z","source":"aep://h/a","agent":"a\u0062","session":"s1","seq":1,"data":{"kind":"confirm","prompt":"` + big + `"}}`)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	kept := make([]string, 0, 4)
	for range 4 {
		e, err := Decode(line)
		require.NoError(t, err)
		kept = append(kept, e.ID(), e.Session(), e.Agent(), e.Source())
	}
	grown := int64(heap()) - int64(before)
	require.Equal(t, "ab", kept[2], "an escaped attribute decodes")
	require.Less(t, grown, int64(size), "four events' attributes kept %d bytes alive, want far less than one event (%d)", grown, size)
	runtime.KeepAlive(kept)
	runtime.KeepAlive(line)
}
