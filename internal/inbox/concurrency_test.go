package inbox

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentUse drives every entry point at once; -race checks it,
// and the end state must be what the events say.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	in, clk := newTestInbox(t)
	const n = 100
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			in.Apply(request(t, fmt.Sprintf("r%d", i), int64(2*i), formData(clk.Now().Add(time.Hour).Format(time.RFC3339))))
		}
	})
	wg.Go(func() {
		for i := range n {
			in.Apply(lifecycle(t, "attention.timeout", fmt.Sprintf("t%d", i), fmt.Sprintf("r%d", i), "", int64(2*i+1), nil))
		}
	})
	wg.Go(func() {
		for i := range n {
			_, _ = in.BeginSubmission(cardIDOf(fmt.Sprintf("r%d", i)), Submission{Token: "t", CommandID: fmt.Sprintf("c%d", i)})
			in.SettleSubmission(cardIDOf(fmt.Sprintf("r%d", i)), fmt.Sprintf("c%d", i), SubmissionFailed, "timeout", "")
		}
	})
	wg.Go(func() {
		for range n {
			_ = in.Cards(Query{})
			_ = in.Status()
			in.Sweep()
			_, _ = in.Since(in.Seq() / 2)
		}
	})
	wg.Go(func() {
		for range n {
			s := in.Subscribe(2)
			drainNow(s)
			s.Close()
		}
	})
	wg.Go(func() {
		for i := range n {
			in.FeedState(i%2 == 0, nil)
		}
	})
	wg.Wait()
	cards := in.Cards(Query{})
	require.Len(t, cards, n)
	for _, c := range cards {
		assert.Equal(t, StateTimedOut, c.State, "card %s", c.Key.RequestID)
	}
}
