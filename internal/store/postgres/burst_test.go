package postgres

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// The first answers after a start, all at once, on a pool smaller than
// the burst: every Record and every Settle goes through. A statement
// prepared on the pool while each transaction held one of its
// connections waited for a connection none would let go, and the whole
// burst failed after the write timeout with nothing kept. Pool sizes:
// one connection (pool_max_conns=1 in the URL, which an operator may
// set) and pgxpool's default on a small machine (4).
func TestFirstBurstOfAnswersOnAFreshPool(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	for _, conns := range []int{1, 4} {
		t.Run("pool_max_conns="+strconv.Itoa(conns), func(t *testing.T) {
			t.Parallel()
			j := openURL(t, c.NewDatabase(t)+"&pool_max_conns="+strconv.Itoa(conns), Options{WriteTimeout: 10 * time.Second})
			const burst = 16
			all := func(do func(i int) error) []error {
				errs := make([]error, burst)
				gate := make(chan struct{})
				var wg sync.WaitGroup
				for i := range burst {
					wg.Go(func() {
						<-gate
						errs[i] = do(i)
					})
				}
				close(gate)
				wg.Wait()
				return errs
			}
			for i, err := range all(func(i int) error { return j.Record(storetest.Submission(storetest.CmdID(i), storetest.T0)) }) {
				require.NoError(t, err, "post %d", i)
			}
			at := storetest.T0.Add(time.Second)
			for i, err := range all(func(i int) error {
				return j.Settle(storetest.CmdID(i), inbox.SubmissionAccepted, "", "", at)
			}) {
				require.NoError(t, err, "settle %d", i)
			}
			got, err := j.Unsettled()
			require.NoError(t, err)
			assert.Len(t, got, burst, "all kept, accepted and waiting for the agent's record")
			for _, s := range got {
				assert.Equal(t, inbox.SubmissionAccepted, s.State, s.CommandID)
			}
		})
	}
}
