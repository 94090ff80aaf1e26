package store

import (
	"errors"
	"time"
)

// Session is one operator's signed-in browser, as the journal keeps it.
// The browser's cookie carries a random id; the journal keeps only its
// SHA-256 (IDHash), so reading the journal does not sign anyone in.
type Session struct {
	// IDHash is the hex SHA-256 of the cookie's random id.
	IDHash string
	// Operator is the name the session signed in as.
	Operator string
	// Secret is a fingerprint (an HMAC) of the secret the session was
	// opened with, never the secret: when the secret changes, the
	// fingerprint no longer matches and the session is refused.
	Secret string
	// UserAgent is the browser's User-Agent at sign-in, cut to 256 bytes.
	UserAgent string
	// Created is when the operator signed in; LastSeen when the session
	// was last used, written at most once a minute.
	Created  time.Time
	LastSeen time.Time
	// Subject is the identity provider's subject of a sign-in there (""
	// for a sign-in with a secret).
	Subject string
	// Refresh is that sign-in's refresh token sealed with a key of this
	// UI's client registration, never the token itself; empty when the
	// provider issued none.
	Refresh []byte
	// Checked is when the sign-in's role and teams were last read from
	// the provider (its sign-in, then each recheck); zero for a sign-in
	// with a secret.
	Checked time.Time
}

// ErrNameTaken is a person's sign-in refused because their name is
// another account's of the identity provider (another subject).
var ErrNameTaken = errors.New("journal: the name is another account's of the identity provider")

// Person is one person the identity provider signed in, as the journal
// keeps them between their sign-ins: the name the UI shows, the role
// and teams their groups gave at their last sign-in or recheck, and
// when that was.
type Person struct {
	Name string
	// Subject is the provider's own id of the account behind the name
	// (the ID token's sub): a name is one account's, so another account
	// the provider gives the same name is refused (ErrNameTaken).
	Subject  string
	Role     string
	Teams    []string
	LastSeen time.Time
}
