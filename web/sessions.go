package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"sync"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// Sessions keeps the operators' signed-in sessions (the answer journal
// does: *sqlite.Journal). Sessions are found by the SHA-256 of the
// cookie's random id, so the store never holds what signs one in.
type Sessions interface {
	CreateSession(ctx context.Context, s store.Session) error
	// LookupSession reads a session; false when there is none.
	LookupSession(ctx context.Context, idHash string) (store.Session, bool, error)
	// LookupSessions reads several sessions at once: those there are, by
	// id hash.
	LookupSessions(ctx context.Context, idHashes []string) (map[string]store.Session, error)
	// TouchSession sets a session's last use.
	TouchSession(ctx context.Context, idHash string, at time.Time) error
	// DeleteSession ends a session; one that is gone is not an error.
	DeleteSession(ctx context.Context, idHash string) error
	// TakeSession ends a session and reports whether this call ended it:
	// false when it was gone or another call ended it first, so of calls
	// racing for one session exactly one is told true.
	TakeSession(ctx context.Context, idHash string) (bool, error)
	// DeleteOtherSessions ends operator's sessions but keepHash.
	DeleteOtherSessions(ctx context.Context, operator, keepHash string) (int, error)
	// DeleteExpiredSessions ends those last used before idleBefore or
	// created before createdBefore.
	DeleteExpiredSessions(ctx context.Context, idleBefore, createdBefore time.Time) (int, error)
	// ClaimSessionCheck sets when a sign-in at the identity provider was
	// last read from it to at, if that was still was: true for the one
	// caller, of every replica's, that is then to ask the provider.
	ClaimSessionCheck(ctx context.Context, idHash string, was, at time.Time) (bool, error)
	// SetSessionRefresh keeps a sign-in's new sealed refresh token.
	SetSessionRefresh(ctx context.Context, idHash string, sealed []byte) error
}

// touchEvery is how often a session's last use is written, at most.
const touchEvery = time.Minute

// maxUserAgent bounds the User-Agent kept with a session, in bytes.
const maxUserAgent = 256

// newSessionID returns a random session id (256 bits, unpadded base64url)
// for the cookie, and the hash the store keeps.
func newSessionID() (id, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	id = base64.RawURLEncoding.EncodeToString(b)
	return id, hashSessionID(id), nil
}

// hashSessionID is the hex SHA-256 of a cookie's session id.
func hashSessionID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// secretFingerprint identifies the secret behind key (sessionKey of the
// shared secret, or of an operator's hash) without revealing it: a
// session opened with another secret has another fingerprint. Sessions
// opened before roles keep it; roleFingerprint is a new session's.
func secretFingerprint(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("aepforms session fingerprint v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// roleFingerprint identifies the secret behind key and the role the
// session was opened with: a session counts only while both are what its
// operator has now, so a changed secret or a changed role ends it, and
// the role cannot be altered in the store without the secret.
func roleFingerprint(key []byte, role Role) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("aepforms session fingerprint v2 " + string(role)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// memorySessions is the Sessions of a UI without a journal: revocable
// within the process, forgotten when it ends.
type memorySessions struct {
	mu sync.Mutex
	m  map[string]store.Session // guarded by mu
}

func newMemorySessions() *memorySessions { return &memorySessions{m: map[string]store.Session{}} }

func (s *memorySessions) CreateSession(_ context.Context, ss store.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[ss.IDHash] = ss
	return nil
}

func (s *memorySessions) LookupSession(_ context.Context, idHash string) (store.Session, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[idHash]
	return ss, ok, nil
}

func (s *memorySessions) LookupSessions(_ context.Context, idHashes []string) (map[string]store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]store.Session, len(idHashes))
	for _, h := range idHashes {
		if ss, ok := s.m[h]; ok {
			out[h] = ss
		}
	}
	return out, nil
}

func (s *memorySessions) TouchSession(_ context.Context, idHash string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.m[idHash]; ok {
		ss.LastSeen = at
		s.m[idHash] = ss
	}
	return nil
}

func (s *memorySessions) DeleteSession(_ context.Context, idHash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, idHash)
	return nil
}

func (s *memorySessions) TakeSession(_ context.Context, idHash string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[idHash]
	delete(s.m, idHash)
	return ok, nil
}

func (s *memorySessions) DeleteOtherSessions(_ context.Context, operator, keepHash string) (int, error) {
	return s.deleteWhere(func(ss store.Session) bool { return ss.Operator == operator && ss.IDHash != keepHash }), nil
}

func (s *memorySessions) DeleteExpiredSessions(_ context.Context, idleBefore, createdBefore time.Time) (int, error) {
	return s.deleteWhere(func(ss store.Session) bool {
		return ss.LastSeen.Before(idleBefore) || ss.Created.Before(createdBefore)
	}), nil
}

func (s *memorySessions) ClaimSessionCheck(_ context.Context, idHash string, was, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[idHash]
	if !ok || !ss.Checked.Equal(was) {
		return false, nil
	}
	ss.Checked = at
	s.m[idHash] = ss
	return true, nil
}

func (s *memorySessions) SetSessionRefresh(_ context.Context, idHash string, sealed []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.m[idHash]; ok {
		ss.Refresh = sealed
		s.m[idHash] = ss
	}
	return nil
}

func (s *memorySessions) deleteWhere(match func(store.Session) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for h, ss := range s.m {
		if match(ss) {
			delete(s.m, h)
			n++
		}
	}
	return n
}
