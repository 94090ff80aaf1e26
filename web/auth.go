package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/store"
)

// cookieName is the operator session cookie.
const cookieName = "aepforms_session"

// auth opens and checks operator sessions. A session is a random id in
// the cookie and a record in Sessions (the journal) found by the id's
// hash: signing out deletes the record, so a copied cookie stops working.
// Each record keeps a fingerprint of the secret it was opened with (the
// shared one, or with named operators, Config.Operators, the operator's
// own hash), so changing that secret ends the sessions it opened. The
// sign-in markers (signedInParam) are signed with a key derived from the
// secret.
type auth struct {
	token string
	// operators are the named operators as they are now (nil: one shared
	// secret); bookOf builds the book of each list once.
	operators *OperatorList
	bookMu    sync.Mutex
	bookOf    *[]Operator   // the list book was built from; guarded by bookMu
	book      *operatorBook // guarded by bookMu
	key       []byte
	store     Sessions
	idle      time.Duration
	max       time.Duration
	// handoffMaxAge bounds a panel's sign-in hand-off (handoff.go):
	// from the frame's start to its redeeming (Config.HandoffMaxAge).
	handoffMaxAge time.Duration
	secure        bool
	embed         bool
	now           func() time.Time
	base          string
	log           *slog.Logger
	// oidc signs operators in with the identity provider (nil: not
	// configured); their sessions keep the fingerprint of oidcKey, derived
	// from the provider's issuer and this UI's client, so changing either
	// ends them.
	oidc    *oidcSignIn
	oidcKey []byte
	// people are those the provider signed in (nil without one).
	people *PeopleList
}

func newAuth(cfg Config, store Sessions) *auth {
	a := &auth{token: cfg.OperatorToken, store: store, idle: cfg.SessionIdle, max: cfg.SessionMax, handoffMaxAge: cfg.HandoffMaxAge,
		secure: cfg.SecureCookies || len(cfg.EmbedOrigins) > 0, embed: len(cfg.EmbedOrigins) > 0, now: cfg.Now, base: cfg.BasePath, log: cfg.Logger}
	switch {
	case len(cfg.Operators) > 0:
		a.operators = cfg.OperatorList
		if a.operators == nil {
			a.operators = NewOperatorList(cfg.Operators)
		}
		var all strings.Builder
		for _, op := range cfg.Operators {
			all.WriteString(op.Hash + "\n")
		}
		a.key = sessionKey(all.String()) // for the sign-in markers
	case a.token != "":
		a.key = sessionKey(a.token)
	}
	if o := cfg.OIDC; o != nil {
		a.oidc = newOIDCSignIn(*o, cfg.BasePath, cfg.Now)
		a.oidcKey = sessionKey("oidc\n" + o.Issuer + "\n" + o.ClientID + "\n" + o.ClientSecret + "\n" + roleMapping(o))
		a.people = cfg.People
		if a.key == nil {
			a.key = a.oidcKey
		}
	}
	return a
}

// sessionKey derives a signing key from a secret (or a secret's hash).
func sessionKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("aepforms operator session v1"))
	return m.Sum(nil)
}

// enabled reports whether an operator secret, named operators or an
// identity provider is configured.
func (a *auth) enabled() bool { return a.token != "" || a.operators != nil || a.oidc != nil }

// named reports whether operators sign in with their own name and secret.
func (a *auth) named() bool { return a.operators != nil }

// operatorBook is the book of the named operators as they are now (nil:
// one shared secret): built again once the list changed (the operators
// file read again), so a changed secret or role holds from the next
// sign-in or session check on.
func (a *auth) operatorBook() *operatorBook {
	if a.operators == nil {
		return nil
	}
	now := a.operators.p.Load()
	a.bookMu.Lock()
	defer a.bookMu.Unlock()
	if a.bookOf != now {
		a.book, a.bookOf = newOperatorBook(*now), now
	}
	return a.book
}

// authenticate checks a presented name and secret and returns the name to
// record. With named operators the name must be one of them and the
// secret its own; otherwise the secret is the shared one and the name a
// label, cleaned (operatorName).
func (a *auth) authenticate(name, secret string) (string, bool) {
	name = operatorName(name)
	if b := a.operatorBook(); b != nil {
		return name, name != "" && b.check(name, secret)
	}
	return name, a.checkToken(secret)
}

// keyFor is the key derived from the secret operator name signs in with
// (nil: none), whose fingerprint the operator's sessions keep.
func (a *auth) keyFor(name string) []byte {
	if b := a.operatorBook(); b != nil {
		return b.keys[name]
	}
	return a.key
}

// configuredRole is the role a sign-in with a secret holds: the
// operators file's line for a named operator, admin for the one shared
// secret (who signs in with it is not known, as before roles).
func (a *auth) configuredRole(name string) Role {
	if b := a.operatorBook(); b != nil {
		if op, ok := b.ops[name]; ok {
			return op.role()
		}
		return RoleViewer
	}
	return RoleAdmin
}

// operatorTeams are the teams operator name is in: the operators file's
// line for a named operator, else the teams the identity provider last
// gave the person (none with one shared secret).
func (a *auth) operatorTeams(name string) []string {
	if b := a.operatorBook(); b != nil {
		if op, ok := b.ops[name]; ok {
			return op.Teams
		}
	}
	return a.teamsOf(name)
}

// checkToken compares a presented secret in constant time; with no
// shared secret (an identity provider alone) none is right.
func (a *auth) checkToken(got string) bool {
	return a.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

// issue opens a session for the operator name and returns the cookie's
// value, its random id. Sessions past their expiry are dropped first, so
// the store holds only live ones (and the abandoned of the last 7 days
// at most, by default).
func (a *auth) issue(ctx context.Context, name, userAgent string) (string, error) {
	return a.issueWith(ctx, a.keyFor(name), name, a.configuredRole(name), userAgent, atProvider{})
}

// issueWith opens a session for name in role, opened with the secret
// behind key (keyFor's, or oidcKey for a sign-in at the identity
// provider, with what it told: at).
func (a *auth) issueWith(ctx context.Context, key []byte, name string, role Role, userAgent string, at atProvider) (string, error) {
	id, hash, err := newSessionID()
	if err != nil {
		return "", err
	}
	return id, a.issueAt(ctx, hash, key, name, role, userAgent, at)
}

// issueAt opens the session whose cookie id hashes to hash (issueWith's
// fresh one, or a panel's hand-off, handoff.go).
func (a *auth) issueAt(ctx context.Context, hash string, key []byte, name string, role Role, userAgent string, at atProvider) error {
	if key == nil {
		return errors.New("web: no secret for operator " + strconv.Quote(name))
	}
	now := a.now()
	if _, err := a.store.DeleteExpiredSessions(ctx, now.Add(-a.idle), now.Add(-a.max)); err != nil {
		return err
	}
	if len(userAgent) > maxUserAgent {
		userAgent = strings.ToValidUTF8(userAgent[:maxUserAgent], "")
	}
	s := store.Session{IDHash: hash, Operator: name, Secret: roleFingerprint(key, role), UserAgent: userAgent, Created: now, LastSeen: now}
	if at.subject != "" {
		s.Subject, s.Refresh, s.Checked = at.subject, at.refresh, now
	}
	return a.store.CreateSession(ctx, s)
}

// session reads the session of a cookie's id. It counts when it exists,
// was opened with the secret its operator has now, has been used within
// the idle expiry and opened within the absolute one; a session that no
// longer counts is deleted. Its last use is written at most once every
// touchEvery.
func (a *auth) session(ctx context.Context, id string) (store.Session, bool, error) {
	if id == "" || len(id) > 128 {
		return store.Session{}, false, nil
	}
	hash := hashSessionID(id)
	s, ok, err := a.store.LookupSession(ctx, hash)
	if err != nil || !ok {
		return s, false, err
	}
	now := a.now()
	if _, ok := a.counts(s, now); !ok {
		return s, false, a.store.DeleteSession(ctx, hash)
	}
	if ok, err := a.recheck(ctx, s); !ok || err != nil {
		return s, false, err
	}
	if now.Sub(s.LastSeen) >= touchEvery {
		if err := a.store.TouchSession(ctx, hash, now); err != nil {
			// The session still counts; its idle time runs from the last write.
			a.log.Warn("web: a session's last use could not be written", "err", err)
		} else {
			s.LastSeen = now
		}
	}
	return s, true, nil
}

// counts reports whether session s counts at now, and its role: opened
// with the secret and in the role its operator has now (sessionRole), used
// within the idle expiry and opened within the absolute one.
func (a *auth) counts(s store.Session, now time.Time) (Role, bool) {
	role, ok := a.sessionRole(s)
	return role, ok && now.Sub(s.LastSeen) < a.idle && now.Sub(s.Created) < a.max
}

// sessionRole is the role session s holds, false when its fingerprint is
// of no secret and role its operator has now. A sign-in with a secret
// holds the role configured for it (configuredRole; a session from before
// roles holds it when it is the one every such sign-in had: answerer for
// a named operator, admin for the shared secret); a sign-in at the
// identity provider holds the role its groups gave it then (the key
// covers the role mapping, so changing the mapping ends those sessions).
func (a *auth) sessionRole(s store.Session) (Role, bool) {
	is := func(fp string) bool { return hmac.Equal([]byte(s.Secret), []byte(fp)) }
	if key := a.keyFor(s.Operator); key != nil {
		role := a.configuredRole(s.Operator)
		legacy := role == RoleAdmin && !a.named() || role == RoleAnswerer && a.named()
		if is(roleFingerprint(key, role)) || legacy && is(secretFingerprint(key)) {
			return role, true
		}
	}
	if a.oidcKey != nil {
		for _, role := range Roles {
			if is(roleFingerprint(a.oidcKey, role)) {
				return role, true
			}
		}
	}
	return "", false
}

// stillLive reports whether the session of idHash counts, as session
// does, without counting the check as a use: an open push stream alone
// does not keep a session from its idle expiry.
func (a *auth) stillLive(ctx context.Context, idHash string) (bool, error) {
	s, ok, err := a.store.LookupSession(ctx, idHash)
	if err != nil || !ok {
		return false, err
	}
	if _, ok := a.counts(s, a.now()); !ok {
		return false, a.store.DeleteSession(ctx, idHash)
	}
	return a.recheck(ctx, s)
}

// bearerDeviceOf is the session a device a script subscribes with the
// secret of operator name (holding role) is kept under.
func (a *auth) bearerDeviceOf(name string, role Role) string {
	return bearerDevice + roleFingerprint(a.keyFor(name), role) + ":" + name
}

// bearerDeviceLive reports whether the script's device kept under h
// (bearerDeviceOf) may be notified: its operator's secret and role are
// still those it subscribed with. A changed or removed secret, or a
// changed role, ends it, as it ends a browser's sign-in.
func (a *auth) bearerDeviceLive(h string) bool {
	fp, name, ok := strings.Cut(strings.TrimPrefix(h, bearerDevice), ":")
	if !ok {
		return false // kept before devices named their secret
	}
	key := a.keyFor(name)
	if len(key) == 0 {
		return false
	}
	return hmac.Equal([]byte(fp), []byte(roleFingerprint(key, a.configuredRole(name))))
}

// devicesLive reports, for each session devices were subscribed under
// (deviceSession), whether they may be notified: its sign-in still
// counts, or a script subscribed them with the operator secret. The
// sign-ins are read in one lookup; one that no longer counts is ended.
func (a *auth) devicesLive(ctx context.Context, idHashes []string) (map[string]bool, error) {
	live := make(map[string]bool, len(idHashes))
	var look []string
	for _, h := range idHashes {
		if strings.HasPrefix(h, bearerDevice) {
			live[h] = a.bearerDeviceLive(h)
		} else {
			look = append(look, h)
		}
	}
	if len(look) == 0 {
		return live, nil
	}
	found, err := a.store.LookupSessions(ctx, look)
	if err != nil {
		return nil, err
	}
	now := a.now()
	for _, h := range look {
		s, ok := found[h]
		if ok {
			if _, ok = a.counts(s, now); !ok {
				if err := a.store.DeleteSession(ctx, h); err != nil {
					a.log.Warn("web: an ended session could not be removed", "err", err)
				}
			}
		}
		live[h] = ok
	}
	return live, nil
}

// signOut deletes the session of the request's cookie, if any, and
// returns its id hash ("" for none).
func (a *auth) signOut(r *http.Request) (string, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return "", nil
	}
	hash := hashSessionID(ck.Value)
	return hash, a.store.DeleteSession(r.Context(), hash)
}

func (a *auth) sign(payload string) string { return signWith(a.key, payload) }

func signWith(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
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
		c.MaxAge = int(a.max / time.Second)
	}
	return c
}

// operator returns the operator name, the session's id hash ("" for
// Bearer), the operator's role and whether the request is signed in
// (session cookie, or `Authorization: Bearer` with the secret; a script
// names its operator in X-Operator-Name, which named operators must).
func (a *auth) operator(r *http.Request) (name, idHash string, role Role, ok bool, err error) {
	if tok, ok := bearer(r.Header.Get("Authorization")); ok {
		name, ok := a.authenticate(r.Header.Get("X-Operator-Name"), tok)
		return name, "", a.configuredRole(name), ok, nil
	}
	ck, cerr := r.Cookie(cookieName)
	if cerr != nil {
		return "", "", "", false, nil
	}
	s, ok, err := a.session(r.Context(), ck.Value)
	if err != nil || !ok {
		return "", "", "", false, err
	}
	role, _ = a.sessionRole(s)
	return s.Operator, s.IDHash, role, true, nil
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
		var keys []string
		if _, tried := bearer(r.Header.Get("Authorization")); tried {
			keys = []string{s.guard.key(r), nameKey(operatorName(r.Header.Get("X-Operator-Name")))}
			if wait := s.guard.refused(keys...); wait > 0 {
				tooManyGuesses(w, wait)
				return
			}
		}
		name, idHash, role, ok, err := s.auth.operator(r)
		if err != nil {
			s.cfg.Logger.Error("web: the session could not be checked", "err", err)
			http.Error(w, "The sign-in could not be checked. Try again in a moment.", http.StatusServiceUnavailable)
			return
		}
		if keys != nil {
			if ok {
				s.guard.succeeded(keys...)
			} else if wait := s.guard.failed("bearer", keys...); wait > 0 {
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
		ctx := withRole(context.WithValue(r.Context(), operatorKey, name), role)
		if idHash == "" {
			ctx = context.WithValue(ctx, bearerDeviceKey, s.auth.bearerDeviceOf(name, role))
		}
		ctx = context.WithValue(ctx, teamsKey, strings.Join(s.auth.operatorTeams(name), ","))
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sessionKeyCtx, idHash)))
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

// ruleNamePrefix starts the name an answer sent by a rule is recorded
// under (rules.ByPrefix: "rule:" and the rule's id); no operator may take
// it, or their answers would be shown as that rule's.
const ruleNamePrefix = "rule:"

// reservedName reports whether s (trimmed) is a name only rules carry.
func reservedName(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= len(ruleNamePrefix) && strings.EqualFold(s[:len(ruleNamePrefix)], ruleNamePrefix)
}

// operatorName cleans a name an operator gave (sign-in form or
// X-Operator-Name): trimmed, valid UTF-8, no control characters, at most
// maxOperatorName bytes, not a rule's (reservedName); anything else is no
// name. It becomes part of every command's agent attribute, so it is kept
// small and printable.
func operatorName(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxOperatorName || !utf8.ValidString(s) || reservedName(s) {
		return ""
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return ""
		}
	}
	return s
}
