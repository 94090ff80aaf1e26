package aeptest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

func streamEvent(t *testing.T, s string) *aep.Event {
	t.Helper()
	e, err := aep.Decode([]byte(s))
	require.NoError(t, err)
	require.NoError(t, ValidateEvent(e), "test event is valid: %s", s)
	return e
}

const sA = `"source":"aep://h/agent/a","agent":"a","session":"s","time":"2026-07-03T10:00:00Z","aep":"0.1"`

func TestStreamChecker(t *testing.T) {
	t.Parallel()
	t.Run("a failed event leaves the state unchanged", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"progress.status","seq":5,`+sA+`}`)))
		require.ErrorIs(t, sc.Check(streamEvent(t, `{"id":"2","type":"progress.status","seq":5,`+sA+`}`)), ErrSeqRegression, "position reused")
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"2","type":"progress.status","seq":6,`+sA+`}`)), "id 2 was not recorded")
	})
	t.Run("redelivery is ignored, even re-encoded", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"session.ended","seq":1,`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"session.ended","seq":1,`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"type":"session.ended","id":"1","seq":1,`+sA+`}`)), "same event, other member order")
		require.ErrorIs(t, sc.Check(streamEvent(t, `{"id":"2","type":"session.ended","seq":2,`+sA+`}`)), ErrSecondSessionEnd)
	})
	t.Run("sessions are keyed by source", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"run.finished","run":"r","seq":3,`+sA+`}`)))
		other := `{"aep":"0.1","id":"1","type":"run.finished","run":"r","seq":0,"source":"aep://h/agent/b","agent":"b","session":"s","time":"2026-07-03T10:00:00Z"}`
		require.NoError(t, sc.Check(streamEvent(t, other)), "same id, session and run from another source")
	})
	t.Run("an epoch bump resets seq", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"progress.status","seq":9,`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"2","type":"progress.status","seq":0,"epoch":1,`+sA+`}`)))
		require.ErrorIs(t, sc.Check(streamEvent(t, `{"id":"3","type":"progress.status","seq":10,"epoch":0,`+sA+`}`)), ErrEpochRegression)
	})
	t.Run("seq-less events are not positioned", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"1","type":"progress.status","seq":9,`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"c","type":"control.pause",`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"2","type":"progress.status","seq":10,`+sA+`}`)))
	})
	t.Run("request closed by timeout or resolved lets the session end", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		for i, ev := range []string{
			`{"id":"r1","type":"attention.requested","seq":0,"data":{"kind":"input","prompt":"p"},` + sA + `}`,
			`{"id":"r2","type":"attention.requested","seq":1,"data":{"kind":"input","prompt":"p"},` + sA + `}`,
			`{"id":"t1","type":"attention.timeout","subject":"r1","seq":2,` + sA + `}`,
			`{"id":"a2","type":"attention.answered","subject":"r2","seq":3,"data":{"answer":{"text":"x"}},"capture":"redacted",` + sA + `}`,
		} {
			require.NoError(t, sc.Check(streamEvent(t, ev)), "event %d", i)
		}
		end := streamEvent(t, `{"id":"e","type":"session.ended","seq":4,`+sA+`}`)
		err := sc.Check(end)
		require.ErrorIs(t, err, ErrPendingAtEnd, "answered is not a terminal")
		assert.Contains(t, err.Error(), `"r2"`)
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"v2","type":"attention.resolved","subject":"r2","seq":4,"data":{"resolution":"answered"},`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"e","type":"session.ended","seq":5,`+sA+`}`)))
	})
	t.Run("answers are judged by the spec rule only", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		req := `{"id":"f","type":"attention.requested","seq":0,"capture":"redacted","data":{"kind":"form","prompt":"p","fields":[` +
			`{"id":"name","type":"string","label":"Name","required":true},{"id":"n","type":"number","label":"N","max":3},` +
			`{"id":"db","type":"select","label":"DB","multi":true,"choices":[{"id":"1","label":"a"}]}]},` + sA + `}`
		require.NoError(t, sc.Check(streamEvent(t, req)))
		// At metadata the required string is gated away, and a number out of
		// range is the UI's rule, not the spec's: both legal on the wire.
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"a1","type":"attention.answered","subject":"f","seq":1,"data":{"answer":{"values":{"n":99,"db":["1"]}}},`+sA+`}`)))
		err := sc.Check(streamEvent(t, `{"id":"a2","type":"attention.answered","subject":"f","seq":2,"data":{"answer":{"values":{"db":["1","2"]}}},`+sA+`}`))
		require.ErrorIs(t, err, ErrInvalidAnswer)
		var se *StreamError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "data.answer.values.db", se.Attr)
	})
	t.Run("acks are per session and command", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"k1","type":"control.accepted","cause":"c1","seq":0,`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"k2","type":"control.rejected","cause":"c2","seq":1,"data":{"reason":"busy"},`+sA+`}`)))
		require.NoError(t, sc.Check(streamEvent(t, `{"id":"k1","type":"control.accepted","cause":"c1","seq":0,`+sA+`}`)), "byte-identical re-ack")
		require.ErrorIs(t, sc.Check(streamEvent(t, `{"id":"k3","type":"control.accepted","cause":"c2","seq":2,`+sA+`}`)), ErrConflictingAck)
	})
	t.Run("concurrent use", func(t *testing.T) {
		t.Parallel()
		sc := NewStreamChecker()
		var wg sync.WaitGroup
		errs := make(chan error, 8*50)
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					src := fmt.Sprintf(`"source":"aep://h/%d","agent":"a","session":"s","time":"2026-07-03T10:00:00Z","aep":"0.1"`, g)
					e, err := aep.Decode(fmt.Appendf(nil, `{"id":"%d","type":"progress.status","seq":%d,%s}`, i, i, src))
					if err == nil {
						err = sc.Check(e)
					}
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	})
}
