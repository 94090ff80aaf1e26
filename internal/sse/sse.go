// Package sse is the text/event-stream wire format, in the two small pieces
// aepforms needs: a Writer for servers (framing that producer-controlled
// strings cannot break, comments, a write deadline and a flush on every
// write) and a Reader for clients that follows the WHATWG event-stream
// parsing rules and, unlike browsers and the common Go libraries, surfaces
// comments (": ping", ": replay-exhausted ..."), which AEP uses for signals.
//
// It uses the standard library only. Bytes pass through unchanged: the
// Reader does not replace invalid UTF-8, so what a Writer wrote is what a
// Reader returns.
package sse

import (
	"errors"
	"time"
)

// DefaultMaxEventBytes is the Reader's event size limit when NewReader is
// given 0 or less: 16 MiB, the AEP reference relay's body limit, so any event
// a relay accepts can be read.
const DefaultMaxEventBytes = 16 << 20

// FramingAllowance is how many bytes an event block may hold beyond its data
// limit for field names, the id, the event type and retry lines: 4 KiB.
const FramingAllowance = 4096

// Sentinel errors of the package.
var (
	// ErrEventTooLarge is returned by Reader.Next for an event block (or a
	// single line) over the reader's limit. The block is discarded up to its
	// terminating blank line and the next call continues after it.
	ErrEventTooLarge = errors.New("sse: event too large")
	// ErrInvalidField is returned by Writer.Event when an id or event name
	// holds CR or LF (which would end the field and let the rest forge
	// fields) or an id holds NUL (which readers silently ignore).
	ErrInvalidField = errors.New("sse: id or event name holds a line break or NUL")
	// ErrNotFlushable is returned by NewWriter when the ResponseWriter (or
	// any writer it wraps) cannot flush, so events would sit in a buffer.
	ErrNotFlushable = errors.New("sse: response writer cannot flush")
)

// Message is one event of the stream.
type Message struct {
	// ID is the event's id. On the Reader side it is the stream's last event
	// id, which persists across messages until an id field changes it
	// (WHATWG). On the Writer side "" writes no id field.
	ID string
	// Event is the event type. The Reader reports "message" when the block
	// named none; the Writer writes no event field for "".
	Event string
	// Data is the payload; several data lines are joined with LF. The Writer
	// splits Data at LF, CR and CRLF into several data lines, so CR and CRLF
	// read back as LF (the format cannot carry a CR).
	Data string
	// Retry is the reconnection time set in this block (millisecond
	// precision); 0 when the block set none.
	Retry time.Duration
}

// Item is what Reader.Next returns: a comment line or a dispatched message.
type Item struct {
	// Comment is a comment line's text after the colon, with one leading
	// space removed (": ping" reads as "ping").
	Comment   string
	IsComment bool
	Message
}
