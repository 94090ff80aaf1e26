package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// msg and comment build expected Items.
func msg(id, event, data string) Item {
	return Item{Message: Message{ID: id, Event: event, Data: data}}
}

func comment(text string) Item { return Item{IsComment: true, Comment: text} }

// readAll reads items until EOF; an error other than EOF is returned with
// the items read so far.
func readAll(r *Reader) ([]Item, error) {
	var out []Item
	for {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
}

// chunkings feed the same bytes whole, one byte per Read and half reads, so
// every boundary case (a CR at the end of a read, a BOM split) is met.
var chunkings = map[string]func(io.Reader) io.Reader{
	"whole":    func(r io.Reader) io.Reader { return r },
	"one-byte": iotest.OneByteReader,
	"half":     iotest.HalfReader,
}

func TestReaderWHATWG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Item
	}{
		{"spec: stock ticker, data lines joined",
			"data: YHOO\ndata: +2\ndata: 10\n\n",
			[]Item{msg("", "message", "YHOO\n+2\n10")}},
		{"spec: comment, id set and reset, one space stripped",
			": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			[]Item{comment("test stream"), msg("1", "message", "first event"), msg("", "message", "second event"), msg("", "message", " third event")}},
		{"spec: field without colon, trailing block discarded at EOF",
			"data\n\ndata\ndata\n\ndata:",
			[]Item{msg("", "message", ""), msg("", "message", "\n")}},
		{"spec: with and without the space",
			"data:test\n\ndata: test\n\n",
			[]Item{msg("", "message", "test"), msg("", "message", "test")}},
		{"spec: event types, reset after dispatch",
			"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata: 113411\n\n",
			[]Item{msg("", "add", "73857293"), msg("", "remove", "2153"), msg("", "message", "113411")}},
		{"CR line ends", "id: a\rdata: x\r\r", []Item{msg("a", "message", "x")}},
		{"CRLF line ends", "id: a\r\ndata: x\r\n\r\n", []Item{msg("a", "message", "x")}},
		{"mixed line ends", "data: a\rdata: b\ndata: c\r\n\n", []Item{msg("", "message", "a\nb\nc")}},
		{"CR CR is two line ends", "data: a\r\rdata: b\n\n", []Item{msg("", "message", "a"), msg("", "message", "b")}},
		{"leading BOM stripped", "\xEF\xBB\xBFdata: x\n\n", []Item{msg("", "message", "x")}},
		{"only the first BOM", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", []Item{msg("", "message", "y")}},
		{"BOM prefix alone", "\xEF\xBB", nil},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []Item{msg("1", "message", "a"), msg("1", "message", "b")}},
		{"last event id persists", "id: 7\ndata: a\n\ndata: b\n\n", []Item{msg("7", "message", "a"), msg("7", "message", "b")}},
		{"id without data sets the id, dispatches nothing", "id: 9\n\ndata: b\n\n", []Item{msg("9", "message", "b")}},
		{"event type without data does not leak", "event: x\n\ndata: b\n\n", []Item{msg("", "message", "b")}},
		{"unknown fields ignored", "foo: bar\ndata: b\nDATA: c\n\n", []Item{msg("", "message", "b")}},
		{"colon in value kept", "data: a: b\n\n", []Item{msg("", "message", "a: b")}},
		{"empty event name is message", "event:\ndata: a\n\n", []Item{msg("", "message", "a")}},
		{"session id with colons and spaces", "id: my s:1:0:42\ndata: a\n\n", []Item{msg("my s:1:0:42", "message", "a")}},
		{"comments surfaced, mid-event too", ": ping\ndata: a\n:replay-exhausted s 0:5\ndata: b\n\n",
			[]Item{comment("ping"), comment("replay-exhausted s 0:5"), msg("", "message", "a\nb")}},
		{"empty comment", ":\n", []Item{comment("")}},
		{"blank lines alone dispatch nothing", "\n\n\r\n", nil},
		{"unterminated event at EOF discarded", "data: a\n", nil},
		{"unterminated comment at EOF discarded", ": a", nil},
	}
	for _, tc := range tests {
		for cname, chunk := range chunkings {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				got, err := readAll(NewReader(chunk(strings.NewReader(tc.in)), 0))
				require.NoError(t, err)
				assert.Equal(t, tc.want, got, "items of %q", tc.in)
			})
		}
	}
}

func TestReaderRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantMsg   time.Duration // on the message of the block
		wantRetry time.Duration // the stream's reconnection time afterwards
	}{
		{"digits", "retry: 1500\ndata: a\n\n", 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"not digits ignored", "retry: 15a\ndata: a\n\n", 0, 0},
		{"negative ignored", "retry: -1\ndata: a\n\n", 0, 0},
		{"empty ignored", "retry:\ndata: a\n\n", 0, 0},
		{"overflow ignored", "retry: 99999999999999999999\ndata: a\n\n", 0, 0},
		{"set in an earlier block persists", "retry: 20\n\ndata: a\n\n", 0, 20 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(strings.NewReader(tc.in), 0)
			it, err := r.Next()
			require.NoError(t, err)
			assert.Equal(t, tc.wantMsg, it.Retry, "message retry")
			assert.Equal(t, tc.wantRetry, r.Retry(), "stream retry")
		})
	}
}

func TestReaderEventTooLarge(t *testing.T) {
	t.Parallel()
	const max = 100
	big := strings.Repeat("x", max+1)
	tests := []struct {
		name string
		in   string
	}{
		{"one data line over the data limit", "data: " + big + "\n\n"},
		{"data lines adding up over the limit", "data: " + big[:60] + "\ndata: " + big[:60] + "\n\n"},
		{"one line over the line limit", "foo: " + strings.Repeat("y", max+FramingAllowance+1) + "\n\n"},
		{"a comment over the line limit", ": " + strings.Repeat("y", max+FramingAllowance+1) + "\ndata: dropped\n\n"},
		{"an oversize line in the middle of a block", "id: 1\ndata: a\ndata: " + big + "\ndata: b\n\n"},
	}
	for _, tc := range tests {
		for cname, chunk := range chunkings {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				t.Parallel()
				in := "data: before\n\n" + tc.in + "data: after\n\n"
				r := NewReader(chunk(strings.NewReader(in)), max)
				it, err := r.Next()
				require.NoError(t, err)
				assert.Equal(t, "before", it.Data)
				_, err = r.Next()
				require.ErrorIs(t, err, ErrEventTooLarge, "got %v, want ErrEventTooLarge", err)
				it, err = r.Next()
				require.NoError(t, err, "reading continues after the oversize block")
				assert.Equal(t, "after", it.Data, "the next block is intact")
				_, err = r.Next()
				assert.ErrorIs(t, err, io.EOF)
			})
		}
	}
}

func TestReaderAtLimit(t *testing.T) {
	t.Parallel()
	const max = 1 << 20 // larger than the read buffer: the long-line path
	data := strings.Repeat("z", max)
	in := "id: s:0:1\nevent: attention.requested\ndata: " + data + "\n\n"
	for cname, chunk := range map[string]func(io.Reader) io.Reader{"whole": chunkings["whole"], "half": iotest.HalfReader} {
		t.Run(cname, func(t *testing.T) {
			t.Parallel()
			it, err := NewReader(chunk(strings.NewReader(in)), max).Next()
			require.NoError(t, err)
			assert.Equal(t, len(data), len(it.Data), "data length")
			assert.Equal(t, "s:0:1", it.ID)
			assert.Equal(t, "attention.requested", it.Event)
		})
	}
}

func TestReaderDefaultLimit(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("j", DefaultMaxEventBytes)
	it, err := NewReader(strings.NewReader("data: "+data+"\n\n"), 0).Next()
	require.NoError(t, err, "a 16 MiB event is accepted by default")
	assert.Len(t, it.Data, DefaultMaxEventBytes)
	_, err = NewReader(strings.NewReader("data: "+data+"j\n\n"), 0).Next()
	assert.ErrorIs(t, err, ErrEventTooLarge, "one byte over is refused")
}

func TestReaderSourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), 0)
	it, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", it.Data)
	_, err = r.Next()
	assert.ErrorIs(t, err, boom, "the source's error, the partial block dropped")
}
