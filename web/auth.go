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
// restart does not.
type auth struct {
	token  string
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
	if a.token != "" {
		m := hmac.New(sha256.New, []byte(a.token))
		m.Write([]byte("aepforms operator session v1"))
		a.key = m.Sum(nil)
	}
	return a
}

// enabled reports whether an operator secret is configured.
func (a *auth) enabled() bool { return a.token != "" }

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
	return payload + "." + a.sign(payload)
}

func (a *auth) sign(payload string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a cookie value's signature and expiry.
func (a *auth) verify(v string) (sessionClaims, bool) {
	var c sessionClaims
	payload, sig, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign(payload))) {
		return c, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil {
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
// may name its operator in X-Operator-Name).
func (a *auth) operator(r *http.Request) (string, bool) {
	if tok, ok := bearer(r.Header.Get("Authorization")); ok {
		if a.checkToken(tok) {
			return operatorName(r.Header.Get("X-Operator-Name")), true
		}
		return "", false
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
