package web

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aepforms/aepforms/internal/answer"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
	"github.com/aepforms/aepforms/internal/render/view"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/static"
)

// Notifier is Web Push as the UI offers it (internal/webpush.Pusher).
type Notifier interface {
	// PublicKey is the VAPID key browsers subscribe with
	// (applicationServerKey).
	PublicKey(ctx context.Context) (string, error)
	// Accept reports whether a push endpoint may be posted to.
	Accept(endpoint string) error
	// PushCounts are the pushes' outcomes, for /metrics.
	PushCounts() (sent, failed, gone int64)
	// CheckAnswerToken accepts a notification's answer token for card
	// from the sign-in session idHash, while it is good.
	CheckAnswerToken(ctx context.Context, token, card, idHash string) error
	// WatchSessions is told how to check that devices' sign-in sessions
	// still count, all of a push's at once: a device whose session ended
	// (expired, signed out anywhere) is pushed nothing more.
	WatchSessions(live func(ctx context.Context, idHashes []string) (map[string]bool, error))
}

// bearerDevice starts the session a device subscribed by a script with
// the operator secret (Bearer) is kept under: it has no sign-in session,
// so it is kept under its operator and a fingerprint of their secret and
// role (bearerDeviceOf), and is notified while that secret still opens
// the UI with that role. A device subscribed while sign-in was off is
// kept under none (""), and is notified only while it stays off.
const bearerDevice = "bearer:"

// deviceSession is the session a device subscribed by the request is
// kept under: its sign-in's id hash, a script's bearer session, none
// with sign-in off.
func deviceSession(ctx context.Context) string {
	h, signedIn := ctx.Value(sessionKeyCtx).(string)
	if signedIn && h == "" {
		b, _ := ctx.Value(bearerDeviceKey).(string)
		return b
	}
	return h
}

// PushDevices is where the operators' devices and their pages'
// visibility are kept (the answer journal).
type PushDevices interface {
	SavePushSubscription(ctx context.Context, s store.PushSubscription) error
	DeletePushSubscription(ctx context.Context, operator, endpoint string) (bool, error)
	DeleteSessionPushSubscriptions(ctx context.Context, idHash string) error
	PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error)
	SetPageVisible(ctx context.Context, page, operator string, visible bool, at time.Time) error
}

// pushConfig is GET {base}/subscriptions: whether push is on (and why
// not), the key to subscribe with, this operator's devices, and the
// controls' words.
type pushConfig struct {
	Enabled bool   `json:"enabled"`
	Off     string `json:"off,omitempty"`
	// Answer is whether the signed-in operator may answer from a
	// notification (their role answers, and this UI does): the page
	// offers "Allow answering from notifications" only then, and a
	// subscription's Actions is kept only then. A viewer is told of new
	// questions, without buttons the server would refuse.
	Answer  bool              `json:"answer"`
	Key     string            `json:"key,omitempty"`
	Devices []pushDevice      `json:"devices"`
	Words   map[string]string `json:"words"`
}

// pushDevice is one of the operator's devices as the page lists it: an
// id (a hash of its endpoint, which the page's own subscription can be
// matched with), since when, and its last failure.
type pushDevice struct {
	ID            string `json:"id"`
	Created       string `json:"created"`
	LastFailure   string `json:"last_failure,omitempty"`
	LastFailureAt string `json:"last_failure_at,omitempty"`
}

// DeviceID is the id the page knows a device by: the first 16 hex digits
// of the SHA-256 of its endpoint.
func DeviceID(endpoint string) string {
	h := sha256.Sum256([]byte(endpoint))
	return hex.EncodeToString(h[:8])
}

var pushControlWords = []string{"subscribe", "unsubscribe", "allow-actions", "sound", "off-insecure", "off-unsupported", "denied", "timeout", "failed", "subscribing", "subscribed", "unsubscribed", "subscribe-refused", "devices", "device-this", "device-other", "device-line", "device-fail"}

func handlePushConfig(n Notifier, devs PushDevices, off string, ui inbox.Viewer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cfg := pushConfig{Off: off, Devices: []pushDevice{}, Words: map[string]string{}, Answer: viewerFor(ui, r).Answers()}
		for _, k := range pushControlWords {
			cfg.Words[k] = view.PushWord(k)
		}
		if n != nil && devs != nil {
			key, err := n.PublicKey(r.Context())
			if err != nil {
				http.Error(w, "Notifications are unavailable: the answer journal could not be read.", http.StatusServiceUnavailable)
				return
			}
			cfg.Enabled, cfg.Key, cfg.Off = true, key, ""
			subs, err := devs.PushSubscriptions(r.Context())
			if err != nil {
				http.Error(w, "Notifications are unavailable: the answer journal could not be read.", http.StatusServiceUnavailable)
				return
			}
			op := operatorFrom(r.Context())
			for _, s := range subs {
				if s.Operator != op {
					continue
				}
				d := pushDevice{ID: DeviceID(s.Endpoint), Created: s.Created.UTC().Format(time.RFC3339), LastFailure: s.LastFailure}
				if !s.LastFailureAt.IsZero() {
					d.LastFailureAt = s.LastFailureAt.UTC().Format(time.RFC3339)
				}
				cfg.Devices = append(cfg.Devices, d)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(cfg)
	}
}

// subscriptionBody is PushSubscription.toJSON(), and the page's choices.
type subscriptionBody struct {
	Endpoint string `json:"endpoint"`
	// Actions is the page's "Allow answering from notifications" for
	// this device (not part of toJSON(); absent is off).
	Actions bool `json:"actions"`
	Keys    struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// keyBytes decodes a subscription key (base64url, padded or not).
func keyBytes(s string) []byte {
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b
	}
	b, _ := base64.URLEncoding.DecodeString(s)
	return b
}

func handleSubscribe(n Notifier, devs PushDevices, ui inbox.Viewer, now func() time.Time, most int, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n == nil || devs == nil {
			http.Error(w, "Notifications are off on this server.", http.StatusNotFound)
			return
		}
		var b subscriptionBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, "The subscription is not the JSON of a PushSubscription.", http.StatusBadRequest)
			return
		}
		if p := keyBytes(b.Keys.P256dh); len(p) != 65 || p[0] != 4 {
			http.Error(w, "The subscription's p256dh key is not a P-256 public key.", http.StatusBadRequest)
			return
		}
		if len(keyBytes(b.Keys.Auth)) != 16 {
			http.Error(w, "The subscription's auth secret is not 16 bytes.", http.StatusBadRequest)
			return
		}
		if err := n.Accept(b.Endpoint); err != nil {
			http.Error(w, view.PushWord("subscribe-refused"), http.StatusUnprocessableEntity)
			return
		}
		s := store.PushSubscription{Endpoint: b.Endpoint, P256dh: b.Keys.P256dh, Auth: b.Keys.Auth,
			Operator: operatorFrom(r.Context()), Session: deviceSession(r.Context()), Actions: b.Actions && viewerFor(ui, r).Answers(), Created: now()}
		if err := devs.SavePushSubscription(r.Context(), s); err != nil {
			http.Error(w, "The subscription could not be kept: the answer journal could not be written.", http.StatusServiceUnavailable)
			return
		}
		if err := capDevices(r.Context(), devs, s.Operator, s.Endpoint, most); err != nil {
			log.Warn("web: replacing an operator's oldest push devices", "err", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": DeviceID(b.Endpoint)})
	}
}

// capDevices keeps at most most push devices of operator, removing the
// oldest (by when subscribed) but keep, the one just subscribed.
func capDevices(ctx context.Context, devs PushDevices, operator, keep string, most int) error {
	all, err := devs.PushSubscriptions(ctx)
	if err != nil {
		return err
	}
	var mine []store.PushSubscription
	for _, d := range all {
		if d.Operator == operator && d.Endpoint != keep {
			mine = append(mine, d)
		}
	}
	if len(mine) < most {
		return nil
	}
	slices.SortFunc(mine, func(a, b store.PushSubscription) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Endpoint, b.Endpoint))
	})
	var errs []error
	for _, d := range mine[:len(mine)-(most-1)] {
		if _, err := devs.DeletePushSubscription(ctx, operator, d.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func handleUnsubscribe(devs PushDevices) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Endpoint string `json:"endpoint"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Endpoint == "" {
			http.Error(w, `Send {"endpoint": …} to remove a subscription.`, http.StatusBadRequest)
			return
		}
		if devs == nil {
			http.Error(w, "Notifications are off on this server.", http.StatusNotFound)
			return
		}
		gone, err := devs.DeletePushSubscription(r.Context(), operatorFrom(r.Context()), b.Endpoint)
		switch {
		case err != nil:
			http.Error(w, "The subscription could not be removed: the answer journal could not be written.", http.StatusServiceUnavailable)
		case !gone:
			http.Error(w, "No such subscription of yours.", http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// handleVisibility keeps whether one of the operator's pages is in view
// ({"page": id, "visible": bool}), so no push goes to a looking operator.
func handleVisibility(devs PushDevices, now func() time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Page    string `json:"page"`
			Visible bool   `json:"visible"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || !pageID(b.Page) {
			http.Error(w, `Send {"page": id, "visible": true|false}.`, http.StatusBadRequest)
			return
		}
		if devs == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if err := devs.SetPageVisible(r.Context(), b.Page, operatorFrom(r.Context()), b.Visible, now()); err != nil {
			http.Error(w, "The answer journal could not be written.", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// pageID accepts a page's random id: 8 to 64 letters, digits and dashes.
func pageID(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// handleServiceWorker serves the service worker at {base}sw.js, so its
// scope is the whole UI.
func handleServiceWorker() http.HandlerFunc {
	body, err := fs.ReadFile(static.FS, "sw.js")
	if err != nil {
		panic(errors.Join(errors.New("web: sw.js missing"), err))
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	}
}

// handleManifest is the web app manifest: installing the UI to a home
// screen is what lets an iPhone receive its pushes.
func handleManifest(base string) http.HandlerFunc {
	m, _ := json.Marshal(map[string]any{
		"name": "aepforms", "short_name": "aepforms", "id": base, "start_url": base, "scope": base, "display": "standalone",
		"icons": []map[string]string{{"src": base + "static/icon.svg", "sizes": "any", "type": "image/svg+xml"}},
	})
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/manifest+json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(m)
	}
}

// handleNotificationAnswer takes an answer chosen in a notification's
// action (the service worker's post: {token, option}): the token must be
// this server's, for this card and this sign-in, and still good; then it
// is the answer's form token, and the answer goes down the page's own
// answer path (answerCard), so one token makes one command and a settled
// card is refused there. The reply is the card's fragment and status,
// as for the page script.
func handleNotificationAnswer(n Notifier, svc *answer.Service, pg *pages, m *Metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n == nil {
			http.Error(w, "Notifications are off on this server.", http.StatusNotFound)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The answer could not be read.", http.StatusBadRequest)
			return
		}
		tok, opt := r.PostForm.Get("token"), r.PostForm.Get("option")
		id := chi.URLParam(r, "id")
		if err := n.CheckAnswerToken(r.Context(), tok, id, sessionFrom(r.Context())); err != nil {
			http.Error(w, view.PushWord("answer-failed"), http.StatusForbidden)
			return
		}
		// Answered as the page script's post is: the card's fragment.
		r = r.Clone(r.Context())
		r.Header.Set(HeaderFragment, "card")
		answerCard(svc, pg, m, w, r, cardPost{id: inbox.CardID(id), form: url.Values{form.NameToken: {tok}, form.NameOption: {opt}}})
	}
}
