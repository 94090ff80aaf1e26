package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// readBufSize is the Reader's read buffer; longer lines are gathered in a
// separate buffer up to the limit.
const readBufSize = 64 << 10

// errLineTooLong is the internal signal of a line over the limit.
var errLineTooLong = errors.New("sse: line too long")

var bom = []byte("\xEF\xBB\xBF")

// Reader parses an event stream by the WHATWG rules: an optional leading
// BOM, lines ended by CR, LF or CRLF, "field: value" with one leading space
// removed from the value, a line without a colon as a field with an empty
// value, data lines joined with LF, an id holding NUL ignored, retry taken
// only when all ASCII digits, the last event id kept across messages, a
// block without data dispatching nothing, and "message" as the default
// event type. Unlike a browser's EventSource it returns comment lines as
// Items. At the end of the stream a block without its blank line is
// discarded. A Reader is not safe for concurrent use.
type Reader struct {
	src  io.Reader
	buf  []byte
	r, w int
	err  error // sticky error of src, returned once buffered bytes are used

	max   int // data limit of one event
	limit int // limit of one line and of one block's lines: max + FramingAllowance

	started    bool // the leading BOM check is done
	skipLF     bool // the previous line ended in CR: a leading LF belongs to it
	discarding bool // skipping the rest of an oversize block

	line       []byte // a line longer than the buffer
	first      string // the block's first data line (the usual only one), copied once
	dataLines  int    // data lines in the block
	data       []byte // data buffer from the second data line on, each line followed by LF
	dataLen    int    // bytes of data in the block, LFs between lines included
	event      []byte // event type buffer
	lastType   string // the previous dispatched type, reused to avoid allocation
	lastID     string
	retry      time.Duration // the stream's reconnection time
	blockRetry time.Duration
	blockBytes int
}

// NewReader returns a Reader of r whose events may hold up to maxEventBytes
// of data (DefaultMaxEventBytes, 16 MiB, when maxEventBytes <= 0); a block's
// lines may add FramingAllowance for field names, id and type.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return &Reader{
		src:   r,
		buf:   make([]byte, readBufSize),
		max:   maxEventBytes,
		limit: maxEventBytes + FramingAllowance,
	}
}

// Retry returns the stream's reconnection time, the last valid retry field
// seen; 0 when none was.
func (r *Reader) Retry() time.Duration { return r.retry }

// Next returns the next comment or message. It returns ErrEventTooLarge
// (wrapped) for an oversize block, after which reading may continue; io.EOF
// at the end of the stream; any other error of the underlying reader as is.
func (r *Reader) Next() (Item, error) {
	for {
		line, err := r.readLine()
		if errors.Is(err, errLineTooLong) {
			return Item{}, r.tooLarge()
		}
		if err != nil {
			return Item{}, err
		}
		if len(line) == 0 {
			if r.discarding {
				r.discarding = false
				continue
			}
			if m, ok := r.dispatch(); ok {
				return Item{Message: m}, nil
			}
			continue
		}
		if r.discarding {
			continue
		}
		if line[0] == ':' {
			return Item{IsComment: true, Comment: string(trimSpace(line[1:]))}, nil
		}
		r.blockBytes += len(line)
		if r.blockBytes > r.limit {
			return Item{}, r.tooLarge()
		}
		if err := r.field(line); err != nil {
			return Item{}, err
		}
	}
}

// field processes one field line.
func (r *Reader) field(line []byte) error {
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], trimSpace(line[i+1:])
	}
	switch string(name) {
	case "data":
		if r.dataLines > 0 {
			r.dataLen++ // the LF joining it to the previous line
		}
		r.dataLen += len(value)
		if r.dataLen > r.max {
			return r.tooLarge()
		}
		r.dataLines++
		switch r.dataLines {
		case 1:
			r.first = string(value)
		case 2:
			r.data = append(r.data, r.first...)
			fallthrough
		default:
			r.data = append(r.data, '\n')
			r.data = append(r.data, value...)
		}
	case "event":
		r.event = append(r.event[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.lastID {
			r.lastID = string(value)
		}
	case "retry":
		if d, ok := parseRetry(value); ok {
			r.retry, r.blockRetry = d, d
		}
	}
	return nil
}

// parseRetry reads a retry value: ASCII digits only, in milliseconds. A
// value too large for a time.Duration is ignored like any invalid one.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// trimSpace removes one leading U+0020.
func trimSpace(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}

// tooLarge discards the block being built and skips to its end.
func (r *Reader) tooLarge() error {
	r.resetBlock()
	r.discarding = true
	return fmt.Errorf("%w: over %d bytes", ErrEventTooLarge, r.max)
}

// dispatch ends a block: a message when the data buffer is not empty.
func (r *Reader) dispatch() (Message, bool) {
	defer r.resetBlock()
	if r.dataLines == 0 {
		return Message{}, false
	}
	data := r.first
	if r.dataLines > 1 {
		data = string(r.data)
	}
	typ := "message"
	if len(r.event) > 0 {
		if string(r.event) != r.lastType {
			r.lastType = string(r.event)
		}
		typ = r.lastType
	}
	return Message{
		ID:    r.lastID,
		Event: typ,
		Data:  data,
		Retry: r.blockRetry,
	}, true
}

func (r *Reader) resetBlock() {
	r.data, r.event = shrink(r.data), r.event[:0]
	r.first, r.dataLines, r.dataLen = "", 0, 0
	r.blockRetry, r.blockBytes = 0, 0
}

// shrink empties b, releasing it when a large event made it big.
func shrink(b []byte) []byte {
	if cap(b) > readBufSize {
		return nil
	}
	return b[:0]
}

// readLine returns the next line without its end. The slice is valid until
// the next call. A line over the limit is consumed and errLineTooLong
// returned. At the end of the stream an unterminated line is dropped and
// the source's error returned.
func (r *Reader) readLine() ([]byte, error) {
	if !r.started {
		if err := r.stripBOM(); err != nil {
			return nil, err
		}
	}
	r.line = shrink(r.line)
	over := false
	for {
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, err
			}
		}
		if r.skipLF {
			r.skipLF = false
			if r.buf[r.r] == '\n' {
				r.r++
				continue
			}
		}
		seg := r.buf[r.r:r.w]
		i := indexEOL(seg)
		if i < 0 {
			if !over && len(r.line)+len(seg) > r.limit {
				over, r.line = true, shrink(r.line)
			}
			if !over {
				r.line = append(r.line, seg...)
			}
			r.r = r.w
			continue
		}
		r.skipLF = seg[i] == '\r'
		r.r += i + 1
		switch {
		case over || len(r.line)+i > r.limit:
			return nil, errLineTooLong
		case len(r.line) > 0:
			r.line = append(r.line, seg[:i]...)
			return r.line, nil
		}
		return seg[:i], nil
	}
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// stripBOM drops one leading U+FEFF, reading until it is ruled in or out.
func (r *Reader) stripBOM() error {
	for r.w-r.r < len(bom) && bytes.HasPrefix(bom, r.buf[r.r:r.w]) {
		if err := r.fill(); err != nil {
			if r.w > r.r {
				break // a short stream that is a BOM prefix: parse what there is
			}
			return err
		}
	}
	if bytes.HasPrefix(r.buf[r.r:r.w], bom) {
		r.r += len(bom)
	}
	r.started = true
	return nil
}

// fill reads more bytes after the unread ones. It returns the source's error
// only when no byte was read.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		if err != nil {
			r.err = err
		}
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	r.err = io.ErrNoProgress
	return r.err
}
