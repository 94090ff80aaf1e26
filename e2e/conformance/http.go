package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/aepforms/aepforms/internal/aep"
)

// maxResponse bounds a non-streaming response body the checker reads.
const maxResponse = 8 << 20

// req is one HTTP request the checker makes.
type req struct {
	method, path string
	query        url.Values
	body         []byte
	ctype        string
	version      string // AEP-Version; "" with noVersion unset means 0.1 on POST
	noVersion    bool
	token        *string // nil: the target's token (if any) as a bearer header
	header       http.Header
}

// resp is a read HTTP response.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r *runner) url(path string, q url.Values) string {
	u := r.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (r *runner) newRequest(ctx context.Context, q req) (*http.Request, error) {
	if q.method == "" {
		q.method = http.MethodGet
	}
	var body io.Reader
	if q.body != nil {
		body = bytes.NewReader(q.body)
	}
	hr, err := http.NewRequestWithContext(ctx, q.method, r.url(q.path, q.query), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range q.header {
		hr.Header[k] = vs
	}
	if q.ctype != "" {
		hr.Header.Set("Content-Type", q.ctype)
	}
	if q.method == http.MethodPost && !q.noVersion {
		v := q.version
		if v == "" {
			v = aep.Version
		}
		hr.Header.Set("AEP-Version", v)
	}
	tok := r.t.Token
	if q.token != nil {
		tok = *q.token
	}
	if tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	return hr, nil
}

// do makes q and reads the whole response.
func (r *runner) do(ctx context.Context, q req) (resp, error) {
	hr, err := r.newRequest(ctx, q)
	if err != nil {
		return resp{}, err
	}
	res, err := r.hc.Do(hr)
	if err != nil {
		return resp{}, fmt.Errorf("%s %s: %w", q.method, q.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return resp{}, fmt.Errorf("%s %s: reading body: %w", q.method, q.path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}, nil
}

func tokenPtr(s string) *string { return &s }

// ndjson joins events' bytes one per line.
func ndjson(evs []*aep.Event) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		b.Write(e.Raw())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// post emits evs over HTTP (one as application/json, more as an NDJSON
// batch) and requires 202.
func (r *runner) post(ctx context.Context, evs ...*aep.Event) error {
	q := req{method: http.MethodPost, path: "/events", ctype: "application/json"}
	if len(evs) == 1 {
		q.body = evs[0].Raw()
	} else {
		q.body, q.ctype = ndjson(evs), "application/x-ndjson"
	}
	res, err := r.do(ctx, q)
	if err != nil {
		return err
	}
	if res.status != http.StatusAccepted {
		return fmt.Errorf("POST /events (%d events): got %d %s, want 202", len(evs), res.status, clip(res.body))
	}
	return nil
}

// postChunked posts evs in batches of at most the target's batch limit.
func (r *runner) postChunked(ctx context.Context, evs []*aep.Event) error {
	n := 50
	if r.t.MaxBatch > 0 && r.t.MaxBatch < n {
		n = r.t.MaxBatch
	}
	for i := 0; i < len(evs); i += n {
		if err := r.post(ctx, evs[i:min(i+n, len(evs))]...); err != nil {
			return err
		}
	}
	return nil
}

// filterSession is the attr-match filter {"session": s}.
func filterSession(s ...string) string {
	if len(s) == 1 {
		return string(mustJSON(map[string]any{"session": s[0]}))
	}
	return string(mustJSON(map[string]any{"session": s}))
}

// fromPositions is a from parameter naming positions.
func fromPositions(ps ...pos) string { return string(mustJSON(ps)) }

// pos is one resume position of a from parameter.
type pos struct {
	Session string `json:"session"`
	Epoch   int64  `json:"epoch"`
	Seq     int64  `json:"seq"`
}

// history is what /stream replays for filter with from=all and live=0: the
// buffered events of the matching sessions, then the end of the response.
func (r *runner) history(ctx context.Context, filter string, extra url.Values) ([]sseItem, error) {
	q := url.Values{"filter": {filter}, "from": {"all"}, "live": {"0"}}
	for k, v := range extra {
		q[k] = v
	}
	return r.replay(ctx, q, nil)
}

// replay opens /stream with q (which should hold live=0) and returns every
// item up to the end of the response.
func (r *runner) replay(ctx context.Context, q url.Values, hdr http.Header) ([]sseItem, error) {
	s, res, err := r.openSSE(ctx, q, hdr, nil)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("GET /stream?%s: got %d %s, want 200", q.Encode(), res.status, clip(res.body))
	}
	defer s.close()
	items, err := s.log.waitEnd(ctx)
	if err != nil {
		return items, fmt.Errorf("GET /stream?%s with live=0: the response did not end: %w", q.Encode(), err)
	}
	return items, nil
}

// events keeps the messages of items (comments dropped).
func events(items []sseItem) []sseItem {
	var out []sseItem
	for _, it := range items {
		if !it.isComment {
			out = append(out, it)
		}
	}
	return out
}

// containsID reports whether an SSE message of items carries an event with id.
func containsID(items []sseItem, id string) bool {
	for _, it := range items {
		if !it.isComment {
			if e, err := aep.Decode([]byte(it.data)); err == nil && e.ID() == id {
				return true
			}
		}
	}
	return false
}

// seqsOf lists the seq of every message of items, -1 for none.
func seqsOf(items []sseItem) []int64 {
	var out []int64
	for _, it := range events(items) {
		e, err := aep.Decode([]byte(it.data))
		if err != nil {
			out = append(out, -2)
			continue
		}
		s, ok := e.Seq()
		if !ok {
			s = -1
		}
		out = append(out, s)
	}
	return out
}

// commentsOf lists the comment texts of items.
func commentsOf(items []sseItem) []string {
	var out []string
	for _, it := range items {
		if it.isComment {
			out = append(out, it.comment)
		}
	}
	return out
}
