package web

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/sse"
)

// The batch region's counts by push.
//
// Every inbox page shows "Answer several at once" with how many questions
// wait in each group of one shape. Those counts are one truth for every
// page of a filter: batchSums derives them once (view.BatchSummary, from
// the heads) and frames them once as a `batches` push message, which
// every browser of that filter writes as is. A browser asks for the
// summary once per burst of card changes: its first change arms a timer
// of Config.BatchPushEvery and the changes until it fires ride along; the
// summary of a filter is derived at most once per that interval, however
// many browsers ask. The page script updates its region from the message
// and fetches the region (GET /batches?region=1) only for a group it has
// never drawn.

// maxBatchSums bounds the filters whose summaries are kept; past it they
// are all dropped (each is derived again when next asked).
const maxBatchSums = 256

// batchSums are the batch summaries by filter. Safe for concurrent use.
type batchSums struct {
	in    Inbox
	pg    *batchPages
	every time.Duration
	mu    sync.Mutex
	m     map[inbox.Query]*batchSum
}

// batchSum is one filter's latest summary, framed.
type batchSum struct {
	mu    sync.Mutex
	seq   uint64    // the inbox's change seq it was derived at (or after)
	at    time.Time // when it was derived
	frame []byte    // the `batches` message; nil before the first
}

func newBatchSums(in Inbox, pg *batchPages, every time.Duration) *batchSums {
	return &batchSums{in: in, pg: pg, every: every, m: make(map[inbox.Query]*batchSum)}
}

// get returns filter q's summary message as of change seq or later. When
// the one kept is older and was derived less than the interval ago, it
// returns nil and how long to wait before asking again: a filter's
// summary is derived at most once per interval.
func (s *batchSums) get(q inbox.Query, seq uint64) ([]byte, time.Duration, error) {
	s.mu.Lock()
	e := s.m[q]
	if e == nil {
		if len(s.m) >= maxBatchSums {
			clear(s.m)
		}
		e = &batchSum{}
		s.m[q] = e
	}
	s.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.frame != nil && e.seq >= seq {
		return e.frame, 0, nil
	}
	if since := time.Since(e.at); e.frame != nil && since < s.every {
		return nil, s.every - since, nil
	}
	at := s.in.Seq() // the heads read next hold every change up to it
	data, err := json.Marshal(view.BatchSummaryOf(view.BatchShapes(s.in.Heads(q), s.pg.now(), s.pg.viewer)))
	if err != nil {
		return nil, 0, err
	}
	frame, err := sse.AppendFrame(nil, sse.Message{Event: "batches", Data: string(data)})
	if err != nil {
		return nil, 0, err
	}
	e.seq, e.at, e.frame = at, time.Now(), frame
	return frame, 0, nil
}
