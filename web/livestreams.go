package web

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// liveStreams are the push streams open now, by the session they were
// opened with, so that a session that ends ends its streams at once: a
// stream left open after sign-out would go on sending the next
// question's text and form token. Sign-out and "sign out my other
// sessions" end them as they delete the sessions; an expiry, a changed
// secret or a sign-out on another replica sharing the journal is found
// by a recheck of each session with open streams every `every` (one
// goroutine, running while any stream is open). It also bounds the
// streams one session holds (max): each holds a connection for hours,
// and a connection serving a stream is never shed, so one session's
// hundreds would take every connection slot.
type liveStreams struct {
	max   int
	every time.Duration
	// live reports whether the session of an id hash still counts.
	live func(ctx context.Context, idHash string) (bool, error)
	log  *slog.Logger

	mu      sync.Mutex
	byKey   map[string]map[*liveStream]struct{} // guarded by mu
	running bool                                // the recheck goroutine; guarded by mu
}

// liveStream is one open push stream.
type liveStream struct {
	key      string // its session's id hash, or bearerKey of its name
	idHash   string // "" for a Bearer script
	operator string
	mu       sync.Mutex
	cancel   context.CancelFunc // nil until bound; guarded by mu
	ended    atomic.Bool        // its session ended, or could not be checked
	// unchecked: it ended because its session could not be checked
	// (uncheckedRechecks in a row), not because it ended.
	unchecked atomic.Bool
}

// uncheckedRechecks is how many rechecks in a row a session's lookup may
// fail (the journal unreachable, or hanging) before its streams end: a
// recheck interval's hiccup keeps them, but a session that cannot be
// checked for a minute (at the default --session-recheck of 15 s) may
// have been signed out or expired meanwhile, and its streams would go on
// sending the next questions for as long as the journal stays down. The
// page reloads, and its next request checks the session afresh.
const uncheckedRechecks = 4

// reloadWhy is what the stream's last message says to the page: why it
// ended.
func (s *liveStream) reloadWhy() string {
	if s.unchecked.Load() {
		return "session unchecked"
	}
	return "signed out"
}

func newLiveStreams(max int, every time.Duration, live func(context.Context, string) (bool, error), log *slog.Logger) *liveStreams {
	return &liveStreams{max: max, every: every, live: live, log: log, byKey: map[string]map[*liveStream]struct{}{}}
}

// bearerKey is what a Bearer script's streams are counted under: its
// operator's name, as it has no session.
func bearerKey(operator string) string { return "bearer\x00" + operator }

// open counts a new stream of the session idHash (or, "", of a Bearer
// script naming operator); false when that session holds max already
// (max 0: unbounded, a UI without an operator secret has no sessions).
func (l *liveStreams) open(idHash, operator string) (*liveStream, bool) {
	s := &liveStream{key: idHash, idHash: idHash, operator: operator}
	if idHash == "" {
		s.key = bearerKey(operator)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.byKey[s.key]
	if l.max > 0 && len(set) >= l.max {
		return nil, false
	}
	if set == nil {
		set = map[*liveStream]struct{}{}
		l.byKey[s.key] = set
	}
	set[s] = struct{}{}
	if !l.running && idHash != "" {
		l.running = true
		go l.recheck()
	}
	return s, true
}

// confirm ends s at once when its session no longer counts, checked
// after s is counted: a sign-out between the request's session check and
// open found no stream of it to end. A session that cannot be checked
// keeps its stream, as in recheck.
func (l *liveStreams) confirm(ctx context.Context, s *liveStream) {
	if s.idHash == "" {
		return
	}
	if ok, err := l.live(ctx, s.idHash); err == nil && !ok {
		s.end()
	}
}

// close forgets a stream that is over.
func (l *liveStreams) close(s *liveStream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.byKey[s.key]
	delete(set, s)
	if len(set) == 0 {
		delete(l.byKey, s.key)
	}
}

// bind gives the stream the function that ends it; a stream whose
// session ended before is ended at once.
func (s *liveStream) bind(cancel context.CancelFunc) {
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	if s.ended.Load() {
		cancel()
	}
}

// end ends the stream because its session ended.
func (s *liveStream) end() {
	s.ended.Store(true)
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// endWhere ends the streams whose session match picks.
func (l *liveStreams) endWhere(match func(*liveStream) bool) {
	l.mu.Lock()
	var ending []*liveStream
	for _, set := range l.byKey {
		for s := range set {
			if s.idHash != "" && match(s) {
				ending = append(ending, s)
			}
		}
	}
	l.mu.Unlock()
	for _, s := range ending {
		s.end()
	}
}

// endSession ends the streams of the session idHash.
func (l *liveStreams) endSession(idHash string) {
	l.endWhere(func(s *liveStream) bool { return s.idHash == idHash })
}

// endOthers ends operator's streams of sessions other than keep.
func (l *liveStreams) endOthers(operator, keep string) {
	l.endWhere(func(s *liveStream) bool { return s.operator == operator && s.idHash != keep })
}

// check looks session h up for recheck, for at most l.every: a journal
// that hangs on one session would otherwise hold every other session's
// recheck, and the goroutine, until it answered.
func (l *liveStreams) check(h string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.every)
	defer cancel()
	return l.live(ctx, h)
}

// recheck asks, every l.every while a session has open streams, whether
// each such session still counts, and ends the streams of those that do
// not. A session that cannot be checked (the journal unreachable) keeps
// its streams for uncheckedRechecks rechecks in a row, then they end
// too.
func (l *liveStreams) recheck() {
	tk := time.NewTicker(l.every)
	defer tk.Stop()
	failed := map[string]int{} // rechecks in a row a session's lookup failed
	for range tk.C {
		l.mu.Lock()
		var hashes []string
		for key, set := range l.byKey {
			for s := range set {
				if s.idHash != "" {
					hashes = append(hashes, key)
				}
				break
			}
		}
		if len(hashes) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		checked := map[string]int{}
		for _, h := range hashes {
			ok, err := l.check(h)
			switch {
			case err != nil && failed[h]+1 >= uncheckedRechecks:
				l.log.Warn("web: an open push stream's session could not be checked, again: its streams end", "err", err, "rechecks", failed[h]+1)
				l.endWhere(func(s *liveStream) bool {
					if s.idHash == h {
						s.unchecked.Store(true)
					}
					return s.idHash == h
				})
			case err != nil:
				l.log.Warn("web: an open push stream's session could not be checked", "err", err)
				checked[h] = failed[h] + 1
			case !ok:
				l.endSession(h)
			}
		}
		failed = checked
	}
}
