package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store/postgres"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/sqlite"
)

// BenchmarkAnswerPost measures post-to-303: one operator answer through
// the server's handler (middleware, form parsing, BeginSubmission with
// its journal write, the queueing, the redirect), in process, into a
// recorder. Each iteration posts one answer to a server whose inbox
// journals to the SQLite journal (a file in a temp dir: WAL,
// synchronous=FULL, so each post waits for its fsync) and one answer to
// the same server with the in-memory journal, in alternating order, so
// both are measured in the same run under the same load.
//
//   - one-at-a-time: posts one after another;
//   - 4-posters: four operators post at once, and each applies a feed
//     event between its posts; apply-p99-ms is the p99 of those Apply
//     calls, which wait for the inbox lock: a journal write made under
//     that lock would hold them up.
//
// Since replicas, a third server journals to PostgreSQL (pgtest's
// throwaway server over loopback, fsync on), in turn with the other two:
// pg-p50-ms and pg-p99-ms.
//
// Metrics: p50 and p99 of each, in ms, and added-p99-ms, the SQLite p99
// minus the memory p99: the journal write's cost on the post path.
// Target: added-p99-ms under 2. one-at-a-time also reports fsync-p99-ms,
// the p99 of a bare 4 KiB write and fsync in the same directory, timed
// between the posts: the disk's floor under any commit that survives
// power loss.
func BenchmarkAnswerPost(b *testing.B) {
	benchPostWarmup := 20
	if testing.Short() {
		benchPostWarmup = 2
	}
	for _, posters := range []int{1, 4} {
		name := "one-at-a-time"
		if posters > 1 {
			name = fmt.Sprintf("%d-posters", posters)
		}
		b.Run(name, func(b *testing.B) {
			j, err := sqlite.Open(filepath.Join(b.TempDir(), "aepforms.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = j.Close() })
			pj, err := postgres.Open(b.Context(), pgtest.Need(b).NewDatabase(b), postgres.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = pj.Close() })
			n := b.N * posters
			mem := newBenchPostServer(b, nil, n+benchPostWarmup)
			disk := newBenchPostServer(b, j, n+benchPostWarmup)
			shared := newBenchPostServer(b, pj, n+benchPostWarmup)
			for i := n; i < n+benchPostWarmup; i++ { // the first posts open connections and prepare statements
				mem.post(b, i)
				disk.post(b, i)
				shared.post(b, i)
			}
			var memTook, diskTook, pgTook, syncTook, memApply, diskApply benchDurations
			floor, err := os.Create(filepath.Join(b.TempDir(), "floor"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = floor.Close() })
			b.ResetTimer()
			var wg sync.WaitGroup
			for p := range posters {
				wg.Go(func() {
					for i := p; i < n; i += posters {
						switch i % 3 { // each first, second and third in turn
						case 0:
							memTook.add(mem.post(b, i))
							diskTook.add(disk.post(b, i))
							pgTook.add(shared.post(b, i))
						case 1:
							diskTook.add(disk.post(b, i))
							pgTook.add(shared.post(b, i))
							memTook.add(mem.post(b, i))
						default:
							pgTook.add(shared.post(b, i))
							memTook.add(mem.post(b, i))
							diskTook.add(disk.post(b, i))
						}
						if posters > 1 {
							memApply.add(mem.feed(b, i))
							diskApply.add(disk.feed(b, i))
						} else {
							syncTook.add(benchSync(b, floor))
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			mp50, mp99 := memTook.quantiles()
			dp50, dp99 := diskTook.quantiles()
			b.ReportMetric(benchMillis(mp50), "mem-p50-ms")
			b.ReportMetric(benchMillis(mp99), "mem-p99-ms")
			b.ReportMetric(benchMillis(dp50), "sqlite-p50-ms")
			b.ReportMetric(benchMillis(dp99), "sqlite-p99-ms")
			b.ReportMetric(benchMillis(dp99-mp99), "added-p99-ms")
			pp50, pp99 := pgTook.quantiles()
			b.ReportMetric(benchMillis(pp50), "pg-p50-ms")
			b.ReportMetric(benchMillis(pp99), "pg-p99-ms")
			if posters == 1 {
				_, sp99 := syncTook.quantiles()
				b.ReportMetric(benchMillis(sp99), "fsync-p99-ms")
			} else {
				_, ma99 := memApply.quantiles()
				_, da99 := diskApply.quantiles()
				b.ReportMetric(benchMillis(ma99), "mem-apply-p99-ms")
				b.ReportMetric(benchMillis(da99), "sqlite-apply-p99-ms")
			}
			for _, jr := range []inbox.Journal{j, pj} {
				waiting, err := jr.Unsettled()
				if err != nil {
					b.Fatal(err)
				}
				if len(waiting) != n+benchPostWarmup {
					b.Fatalf("the journal holds %d answers, want %d", len(waiting), n+benchPostWarmup)
				}
			}
		})
	}
}

// benchSync writes 4 KiB to f and syncs it: the disk's own floor under
// a journal commit (synchronous=FULL syncs the WAL once per commit).
func benchSync(b *testing.B, f *os.File) time.Duration {
	start := time.Now()
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// benchPostServer is a UI server over an inbox of n open cards, each
// answered once.
type benchPostServer struct {
	h  http.Handler
	in *inbox.Inbox
}

// newBenchPostServer builds the server with j as its journal (nil: the
// in-memory one) and n open one-field forms.
func newBenchPostServer(b *testing.B, j inbox.Journal, n int) *benchPostServer {
	b.Helper()
	s := &benchPostServer{in: inbox.New(inbox.Options{Journal: j, MaxPending: 2*n + 10})}
	s.in.FeedState(true, nil)
	s.h = NewServer(Config{}, Deps{Inbox: s.in, Submitter: benchSubmitter{}, Roster: benchRoster{}})
	for i := range n {
		s.in.Apply(benchPostEvent(b, "bench", fmt.Sprintf("r%d", i), int64(i)))
	}
	return s
}

// feed applies one more question (in a session of its own), as the feed
// does between posts, and returns how long Apply took: the wait for the
// inbox lock included.
func (s *benchPostServer) feed(b *testing.B, i int) time.Duration {
	ev := benchPostEvent(b, fmt.Sprintf("feed%d", i), "q", 0)
	start := time.Now()
	s.in.Apply(ev)
	return time.Since(start)
}

// post answers card i and returns how long the server took to answer 303.
func (s *benchPostServer) post(b *testing.B, i int) time.Duration {
	id := inbox.RequestKey{Source: testSource, Session: "bench", RequestID: fmt.Sprintf("r%d", i)}.CardID()
	form := url.Values{"token": {fmt.Sprintf("t%d", i)}, "f0": {fmt.Sprintf("service-%d", i)}}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/cards/"+string(id)+"/answer", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://127.0.0.1")
	w := &benchWriter{header: http.Header{}}
	start := time.Now()
	s.h.ServeHTTP(w, req)
	took := time.Since(start)
	if w.status != http.StatusSeeOther {
		b.Errorf("answer %d: status %d, want 303", i, w.status)
	}
	return took
}

// benchPostEvent is attention.requested id, a one-field form, in session.
func benchPostEvent(b *testing.B, session, id string, seq int64) *aep.Event {
	ev, err := aep.Build(aep.Envelope{ID: id, Type: "attention.requested", Source: testSource, Agent: testAgent,
		Session: session, Run: "run_1", Seq: aep.Int64(seq), Epoch: aep.Int64(0), Capture: "full",
		Time: time.Now().UTC().Format(time.RFC3339Nano), Data: nameForm()})
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// benchDurations collects latencies from several goroutines.
type benchDurations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *benchDurations) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// quantiles returns the p50 and p99 (nearest rank).
func (l *benchDurations) quantiles() (p50, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		if len(s) == 0 {
			return 0
		}
		i := int(q*float64(len(s))+0.5) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return at(0.50), at(0.99)
}

func benchMillis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
