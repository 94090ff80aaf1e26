package conformance

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSSE(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []sseItem
	}{
		{"message with every field", "event: t.x\ndata: {\"a\":1}\nid: s:0:1\n\n",
			[]sseItem{{event: "t.x", data: `{"a":1}`, id: "s:0:1", hasID: true}}},
		{"comments surface in order", ": replay-exhausted s 0:5\n:ping\ndata: x\n\n",
			[]sseItem{{isComment: true, comment: "replay-exhausted s 0:5"}, {isComment: true, comment: "ping"}, {data: "x"}}},
		{"CRLF and CR line ends", "data: a\r\ndata: b\rid: 7\r\n\r\n",
			[]sseItem{{data: "a\nb", id: "7", hasID: true}}},
		{"leading BOM", "\ufeffdata: x\n\n", []sseItem{{data: "x"}}},
		{"no data dispatches nothing", "event: e\nid: 1\n\ndata: y\n\n", []sseItem{{data: "y"}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []sseItem{{data: "x"}}},
		{"field without colon and one space stripped", "data\ndata:  two\n\n", []sseItem{{data: "\n two"}}},
		{"unterminated message is not dispatched", "data: x\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []sseItem
			err := readSSE(strings.NewReader(c.in), func(it sseItem) bool { got = append(got, it); return true })
			require.NoError(t, err)
			assert.Equal(t, c.want, got, "items of %q", c.in)
		})
	}
}

func TestReadSSEStopsWhenRefused(t *testing.T) {
	t.Parallel()
	n := 0
	err := readSSE(strings.NewReader(": a\n: b\n: c\n"), func(sseItem) bool { n++; return n < 2 })
	require.NoError(t, err)
	assert.Equal(t, 2, n, "items handed over after the first refusal")
}
