package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// cookieName is the operator session cookie.
const cookieName = "aepforms_session"

// auth signs and checks operator sessions. The signing key is derived from
// the operator secret, so rotating the secret signs everyone out and a
// restart does not. With named operators (Config.Operators) each one's
// sessions are signed with a key derived from their own secret's hash,
// and the shared secret is not accepted.
type auth struct {
	token  string
	book   *operatorBook // nil: one shared secret
	key    []byte
	ttl    time.Duration
	secure bool
	embed  bool
	now    func() time.Time
	base   string
}

func newAuth(cfg Config) *auth {
	a := &auth{token: cfg.OperatorToken, ttl: cfg.SessionTTL, secure: cfg.SecureCookies || len(cfg.EmbedOrigins) > 0,
		embed: len(cfg.EmbedOrigins) > 0, now: cfg.Now, base: cfg.BasePath}
	switch {
	case len(cfg.Operators) > 0:
		a.book = newOperatorBook(cfg.Operators)
		var all strings.Builder
		for _, op := range cfg.Operators {
			all.WriteString(op.Hash + "\n")
		}
		a.key = sessionKey(all.String()) // for the sign-in markers
	case a.token != "":
		a.key = sessionKey(a.token)
	}
	return a
}

// sessionKey derives a signing key from a secret (or a secret's hash).
func sessionKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("aepforms operator session v1"))
	return m.Sum(nil)
}

// enabled reports whether an operator secret (or named operators) is
// configured.
func (a *auth) enabled() bool { return a.token != "" || a.book != nil }

// named reports whether operators sign in with their own name and secret.
func (a *auth) named() bool { return a.book != nil }

// authenticate checks a presented name and secret and returns the name to
// record. With named operators the name must be one of them and the
// secret its own; otherwise the secret is the shared one and the name a
// label, cleaned (operatorName).
func (a *auth) authenticate(name, secret string) (string, bool) {
	name = operatorName(name)
	if a.book != nil {
		return name, name != "" && a.book.check(name, secret)
	}
	return name, a.checkToken(secret)
}

// keyFor is the key operator name's sessions are signed with (nil: none).
func (a *auth) keyFor(name string) []byte {
	if a.book != nil {
		return a.book.keys[name]
	}
	return a.key
}

// checkToken compares a presented secret in constant time.
func (a *auth) checkToken(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

type sessionClaims struct {
	Name string `json:"n,omitempty"`
	Exp  int64  `json:"e"`
}

// issue returns a signed cookie value for the operator name.
func (a *auth) issue(name string) string {
	b, _ := json.Marshal(sessionClaims{Name: name, Exp: a.now().Add(a.ttl).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + signWith(a.keyFor(name), payload)
}

func (a *auth) sign(payload string) string { return signWith(a.key, payload) }

func signWith(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a cookie value's signature and expiry. The claims are
// read first only to find the key (named operators each have their own);
// nothing in them counts until the signature does.
func (a *auth) verify(v string) (sessionClaims, bool) {
	var c sessionClaims
	payload, sig, ok := strings.Cut(v, ".")
	if !ok {
		return c, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, false
	}
	key := a.keyFor(c.Name)
	if key == nil || !hmac.Equal([]byte(sig), []byte(signWith(key, payload))) {
		return c, false
	}
	if a.now().Unix() >= c.Exp {
		return c, false
	}
	return c, true
}

// signedInMaxAge is how long after a sign-in its marker (signedInParam)
// counts: the marked page is asked for at once, by the sign-in's redirect.
const signedInMaxAge = 2 * time.Minute

// marker returns a signed, timestamped value for signedInParam: "this
// browser was signed in just now".
func (a *auth) marker() string {
	ts := strconv.FormatInt(a.now().Unix(), 36)
	return ts + "." + a.sign("signed-in "+ts)
}

// checkMarker reports whether v is a marker this UI issued less than
// signedInMaxAge ago.
func (a *auth) checkMarker(v string) bool {
	ts, sig, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign("signed-in "+ts))) {
		return false
	}
	sec, err := strconv.ParseInt(ts, 36, 64)
	if err != nil {
		return false
	}
	age := a.now().Sub(time.Unix(sec, 0))
	return age >= 0 && age <= signedInMaxAge
}

// cookie builds the session cookie (value "" and MaxAge -1 clears it).
//
// Embedded (--embed-origin), the panel runs in a console's frame on
// another site, where browsers block third-party cookies by default. The
// cookie is then SameSite=None (sent in the cross-site frame), Secure (which
// None requires) and Partitioned (CHIPS): the browser keeps it in a jar
// keyed by the top-level site, so it is accepted in the console's frame and
// seen only there; a top-level visit gets its own jar, as any first-party
// cookie. Clearing it needs the same attributes, so one function builds both.
func (a *auth) cookie(value string) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: value, Path: a.base, HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode}
	if a.embed {
		c.SameSite, c.Partitioned = http.SameSiteNoneMode, true
	}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(a.ttl / time.Second)
	}
	return c
}

// operator returns the operator name and whether the request is signed in
// (session cookie, or `Authorization: Bearer` with the secret; a script
// names its operator in X-Operator-Name, which named operators must).
func (a *auth) operator(r *http.Request) (string, bool) {
	if tok, ok := bearer(r.Header.Get("Authorization")); ok {
		return a.authenticate(r.Header.Get("X-Operator-Name"), tok)
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		if c, ok := a.verify(ck.Value); ok {
			return c.Name, true
		}
	}
	return "", false
}

// requireOperator lets signed-in requests through with the operator's name
// in the context. Signed-out page loads are sent to the sign-in page, but
// for one that a sign-in just marked (signedInParam): the browser refused
// the cookie, and the page says so instead. Everything else gets 401.
func (s *server) requireOperator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.auth.enabled() {
			next.ServeHTTP(w, r)
			return
		}
		// A Bearer secret counts against the guessing limits; a cookie's
		// signature is not a secret one can guess.
		client := ""
		if _, tried := bearer(r.Header.Get("Authorization")); tried {
			client = s.guard.key(r)
			if wait := s.guard.refused(client); wait > 0 {
				tooManyGuesses(w, wait)
				return
			}
		}
		name, ok := s.auth.operator(r)
		if client != "" {
			if ok {
				s.guard.succeeded(client)
			} else if wait := s.guard.failed(client, "bearer"); wait > 0 {
				tooManyGuesses(w, wait)
				return
			}
		}
		pageLoad := r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
		marked := r.URL.Query().Has(signedInParam)
		if !ok {
			if pageLoad && marked && s.auth.checkMarker(r.URL.Query().Get(signedInParam)) {
				s.pages.signInNotKept(w, r)
				return
			}
			if pageLoad {
				target := s.cfg.BasePath + "signin"
				if next := nextOf(r); next != "" {
					target += "?" + url.Values{"next": {next}}.Encode()
				}
				http.Redirect(w, r, target, http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="aepforms"`)
			http.Error(w, "Sign in first: this UI needs the operator secret.", http.StatusUnauthorized)
			return
		}
		if pageLoad && marked {
			// The cookie was kept: the marker has done its job.
			http.Redirect(w, r, s.cfg.BasePath+nextOf(r), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), operatorKey, name)))
	})
}

// tooManyGuesses answers a request from an address refused for guessing
// (429, Retry-After).
func tooManyGuesses(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", retryAfter(wait))
	http.Error(w, "Too many wrong secrets were tried from your address. Try again in "+waitWords(wait)+".", http.StatusTooManyRequests)
}

// bearer extracts the credentials of an `Authorization: Bearer` header;
// the scheme is case-insensitive (RFC 7235).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// maxOperatorName bounds an operator's name, in bytes.
const maxOperatorName = 80

// operatorName cleans a name an operator gave (sign-in form or
// X-Operator-Name): trimmed, valid UTF-8, no control characters, at most
// maxOperatorName bytes; anything else is no name. It becomes part of
// every command's agent attribute, so it is kept small and printable.
func operatorName(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxOperatorName || !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return ""
		}
	}
	return s
}
