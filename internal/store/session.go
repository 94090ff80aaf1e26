package store

import "time"

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
}
