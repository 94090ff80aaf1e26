package webpush

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/view"
)

// AnswerFor is how long a notification's answer token is good for at
// most (the card's deadline, when sooner, and its settling end it too:
// a settled card takes no answer).
const AnswerFor = 15 * time.Minute

// ErrAnswerToken is a notification answer token that is not this
// server's, not for this card and session, or too old.
var ErrAnswerToken = errors.New("webpush: notification answer token refused")

// Action is one button of a notification: the option's own words.
type Action struct {
	Action string `json:"action"` // "o{j}": the option's index
	Title  string `json:"title"`
	// Sent replaces the notification once the answer is posted.
	Sent string `json:"sent"`
}

// Answer is where a notification's action posts, and its token.
type Answer struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	// Failed replaces the notification when the post is refused.
	Failed string `json:"failed"`
}

// withActions adds to m the card's options as actions and a token bound
// to the card and the device's sign-in session.
// It offers them only when the card's verdict says one press may answer
// it (Verdict.Tappable, which also holds the watch-only rule).
func (p *Pusher) withActions(ctx context.Context, m Message, c inbox.Card, vd inbox.Verdict, session string, now time.Time) Message {
	if !vd.Tappable {
		return m
	}
	until := now.Add(AnswerFor)
	if vd.Left > 0 && vd.Left < AnswerFor {
		until = vd.Deadline
	}
	tok, err := p.AnswerToken(ctx, string(c.ID), session, until)
	if err != nil {
		return m
	}
	for j, o := range c.Request.Options {
		label := cut(FirstLine(o.Label), 40)
		m.Actions = append(m.Actions, Action{Action: "o" + strconv.Itoa(j), Title: label, Sent: cut(view.PushWord("sent", label), 120)})
	}
	m.Answer = &Answer{URL: p.cfg.BasePath + "cards/" + string(c.ID) + "/notification-answer", Token: tok, Failed: view.PushWord("answer-failed")}
	return m
}

// answerKey is the key answer tokens are signed with, derived from the
// VAPID private key, so every replica (sharing the journal) checks them.
func (p *Pusher) answerKey(ctx context.Context) ([]byte, error) {
	k, err := p.Keys(ctx)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte("aepforms notification answers\x00" + k.Private))
	return h[:], nil
}

// AnswerToken makes a single-use answer token for card, bound to the
// sign-in session (its id hash), valid until until. It is used once as
// the answer's form token, so the inbox's exactly-once path makes one
// command of it however often it is posted.
func (p *Pusher) AnswerToken(ctx context.Context, card, session string, until time.Time) (string, error) {
	key, err := p.answerKey(ctx)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	payload := card + "|" + session + "|" + strconv.FormatInt(until.Unix(), 10) + "|" + hex.EncodeToString(nonce)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + sign(key, payload), nil
}

// CheckAnswerToken accepts tok for card from the session idHash before
// its time is up.
func (p *Pusher) CheckAnswerToken(ctx context.Context, tok, card, session string) error {
	key, err := p.answerKey(ctx)
	if err != nil {
		return err
	}
	enc, mac, ok := strings.Cut(tok, ".")
	if !ok {
		return ErrAnswerToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !hmac.Equal([]byte(sign(key, string(raw))), []byte(mac)) {
		return ErrAnswerToken
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 4 || parts[0] != card || parts[1] != session {
		return ErrAnswerToken
	}
	until, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !p.cfg.Now().Before(time.Unix(until, 0)) {
		return ErrAnswerToken
	}
	return nil
}

func sign(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
