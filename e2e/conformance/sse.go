package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// sseItem is one item of an event stream: a comment line, or a dispatched
// message with its fields.
type sseItem struct {
	isComment bool
	comment   string // the text after ':' with one leading space removed
	event     string
	data      string
	id        string
	hasID     bool // the message had an id: field of its own
}

// sseStream is an open GET /stream response read in the background.
type sseStream struct {
	header http.Header
	log    *feed[sseItem]
	cancel context.CancelFunc
	done   chan struct{}
}

// maxSSELine bounds one line of the event stream.
const maxSSELine = 1 << 20

// openSSE opens /stream with q. On a 200 it returns the stream (read until
// close); otherwise it returns the response read whole and a nil stream.
// token nil sends the target's token as a bearer header.
func (r *runner) openSSE(ctx context.Context, q url.Values, hdr http.Header, token *string) (*sseStream, resp, error) {
	sctx, cancel := context.WithCancel(ctx)
	hr, err := r.newRequest(sctx, req{path: "/stream", query: q, header: hdr, token: token})
	if err != nil {
		cancel()
		return nil, resp{}, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	res, err := r.hc.Do(hr)
	if err != nil {
		cancel()
		return nil, resp{}, fmt.Errorf("GET /stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxResponse))
		return nil, resp{status: res.StatusCode, header: res.Header, body: b}, nil
	}
	s := &sseStream{header: res.Header, log: newFeed[sseItem](), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer res.Body.Close()
		s.log.end(readSSE(res.Body, s.log.add))
	}()
	return s, resp{status: res.StatusCode, header: res.Header}, nil
}

// close ends the stream and waits for its reader.
func (s *sseStream) close() {
	s.cancel()
	<-s.done
}

// readSSE parses an event stream (WHATWG: CR, LF or CRLF line ends, a
// leading BOM, fields with or without a colon, data lines joined by LF,
// a message dispatched at a blank line) and hands each item to add until
// add refuses or the stream ends. An orderly end returns nil.
func readSSE(r io.Reader, add func(sseItem) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var cur sseItem
	var data []string
	hasData, first := false, true
	for {
		line, err := readLine(br)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if first {
			line, first = strings.TrimPrefix(line, "\ufeff"), false
		}
		switch {
		case line == "":
			if hasData {
				cur.data = strings.Join(data, "\n")
				if !add(cur) {
					return nil
				}
			}
			cur, data, hasData = sseItem{}, nil, false
		case line[0] == ':':
			if !add(sseItem{isComment: true, comment: strings.TrimPrefix(line[1:], " ")}) {
				return nil
			}
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "event":
				cur.event = value
			case "data":
				data, hasData = append(data, value), true
			case "id":
				if !strings.ContainsRune(value, 0) {
					cur.id, cur.hasID = value, true
				}
			}
		}
	}
}

// readLine reads one line ending in LF, CR or CRLF, without its end.
func readLine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if n, err := br.Peek(1); err == nil && n[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return b.String(), nil
		}
		if b.Len() >= maxSSELine {
			return "", fmt.Errorf("an event-stream line longer than %d bytes", maxSSELine)
		}
		b.WriteByte(c)
	}
}
