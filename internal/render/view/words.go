package view

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/form"
)

// The one table of what the UI tells the operator about a card: its state
// line, why an answer post sent nothing, and the notes on a card. Every
// state and refusal is worded here and nowhere else; a new state or
// refusal adds its row here, never beside it.
var words = struct {
	// State lines, by the state line's kind (data-state).
	state map[string]string
	// Settled resolutions (attention.resolved), by resolution.
	resolved map[string]string
	// Why a restored answer was not sent again, by reason.
	notSent map[string]string
	// Why a queued answer was not sent, by reason; "" is any other.
	queuedNotSent map[string]string
	// The agent's control.rejected reasons; "" is any other reason.
	rejected map[string]string
	// Why a command did not reach the agent (relay codes and the UI's own
	// reasons); "" is any other reason.
	failed map[string]string
	// Refusals of an answer post, by what refused it.
	refusal map[error]Refusal
	// refusalPage are the words of the pages a post without the script is
	// refused with when no card can show the problem (components.Gone).
	refusalPage map[string]string
	// Notes on an open card.
	note map[string]string
	// Whether a card's agent takes answers now (the relay's roster), by
	// the reach's data-reach value; shown beside the agent's name.
	reach map[string]string
	// The page's own words about its connection to this UI's server.
	page map[string]string
	// The page's status lines (the banners).
	status map[string]string
	// The history page (GET /history): its headings, notes and problems.
	history map[string]string
	// Who answered a settled card from this UI, and the link to the
	// answer's history entry.
	answered map[string]string
	// The card's own words: its provenance line, its details, who
	// answered and how.
	card map[string]string
	// How an answer reached the agent (attention.answered's via), by via;
	// a via not listed is shown as "via %s".
	via map[string]string
	// The empty inbox: how to connect an agent.
	empty map[string]string
	// What became of each answer in the history, in the outcome filter's
	// order; a state not listed here is shown by its name.
	outcomes []outcomeWords
	// Why an answer in the history was not delivered, by reason; "" is
	// any other reason (named).
	historyFailed map[string]string
	// Why an answer in the history is in a state other than failed, by
	// state and reason (owed, unknown, superseded after it was sent).
	historyReason map[inbox.SubmissionState]map[string]string
	// Undo while an answer's command is held (--undo-window).
	undo map[string]string
	// The answer flow: the note to a permission or review card's options,
	// the card's hide button, the page's keyboard shortcuts (Flow).
	flow map[string]string
}{
	state: map[string]string{
		"malformed":   "This request is malformed and cannot be answered: ",
		"over-budget": "Too many options to show safely: %s; answer it in the agent's own interface.",
		"info":        "For information: the agent takes its answer another way (%s), not from here.",
		"sending":     "Sent, waiting for the agent",
		// This UI's answer, its command held for Undo (--undo-window).
		"held":   "Your answer, about to be sent",
		"undone": "Undone: nothing was sent. Answer again below; you had chosen:",
		// An owed answer (inbox.Submission.Owed): sent, no reply yet, and
		// sent again (same answer, same command) when the relay is back.
		"relay-lost":    "Sent, no reply yet; will send again when the relay is back",
		"no-reply":      "Sent, no reply from the agent in time; it may still act. Send the same answer again, or answer differently below.",
		"no-reply-away": "Sent, no reply from the agent in time; it may still act. It is sent again when the relay is back.",
		// Sent before a restart, and not sent again yet (Resume waits for
		// the relay's history): never "sent again" before it is.
		"resumed-waiting": "Sent by %s at %s, before aepforms restarted; it is sent again once the relay is back",
		// Sent, then neither sent again nor answered by the agent's word
		// (inbox.SubmissionUnknown).
		"unknown-restart": "Sent by %s at %s, before aepforms restarted; outcome unknown. The agent's record settles it if it comes.",
		"unknown-too-old": "Sent by %s at %s with no reply from the agent, and not sent again: it got older than the resend limit (--resend-max-age). The agent may or may not have acted on it; answer again only if it still applies.",
		"sent-superseded": "The answer sent by %s at %s got no reply, and was not sent again: this question settled first. The agent may still have acted on it.",
		"replaced":        "Sent by %s at %s with no reply, then replaced by a different answer; the agent may still act on it.",
		"queued":          "Queued: will be sent when the relay is back",
		"queued-agent":    "Waiting for the agent to reconnect: it is not on the relay now. Your answer is kept and sent when it is back.",
		"accepted":        "The agent accepted the answer; waiting for it to record it",
		"expired-open":    "The deadline has passed: this can no longer be answered.",
		"removed":         "This question is no longer shown here: it left the inbox.",
		"withdrawn":       "This question is no longer open; your draft is kept below.",
		"routed":          "Routed%s%s; still open",
		"answered":        "Answered",
		"elsewhere":       "Answered elsewhere",
		"timed-out":       "Timed out: the agent stopped waiting",
		"expired":         "Expired: the deadline passed without an answer",
		"session-ended":   "The session ended before this was answered",
		"settled":         "Settled (%s)",
		"other-sent-as":   "Other “%s” was sent as the choice “%s”",
		// An answer journaled before a restart (inbox.Submission.Resumed):
		// who sent it and when, then what became of it.
		"resumed":          "Sent by %s at %s, before aepforms restarted; sent again, waiting for the agent",
		"resumed-accepted": "Sent by %s at %s, before aepforms restarted; the agent accepted it, waiting for it to record it",
		"resumed-by":       "this UI",
		"not-sent":         "Sent by %s at %s, but not acknowledged before aepforms restarted, and not sent again: %s",
		"superseded":       "The answer sent by %s at %s, before aepforms restarted, was not sent again: this question had settled first.",
		// A command on the feed that no answer of this UI's journal sent
		// (inbox.Card.Answering): another sender's, then one from this
		// UI's own source that its journal does not hold.
		"answering":          "%s answered from another UI, waiting for the agent",
		"answering-accepted": "%s answered from another UI; the agent accepted it, waiting for it to record it",
		"answering-someone":  "Someone",
		"sent-here":          "An answer was already sent from this UI, waiting for the agent",
		// Another instance's answer on the journal replicas share, queued
		// there while the relay was away (inbox.Card.Peer).
		"peer-queued":        "Answer queued on another instance of this UI: it is sent when the relay is back",
		"sent-here-accepted": "An answer was already sent from this UI; the agent accepted it, waiting for it to record it",
		// An answer queued while the relay was away (inbox.SubmissionQueued)
		// and then not sent: who queued it and when, and why.
		"queued-not-sent":   "Queued by %s at %s while the relay was away, and not sent: %s",
		"queued-superseded": "The answer queued by %s at %s while the relay was away was not sent: this question settled first.",
	},
	// Why an answer queued while the relay was away was not sent, by
	// inbox reason.
	queuedNotSent: map[string]string{
		inbox.ReasonTooOld: "the relay was not back before it was too old to send (--resend-max-age). Answer again only if it still applies.",
		"":                 "it was held back when the relay came back.",
	},
	// Why an answer restored after a restart was not sent again, by
	// inbox reason.
	notSent: map[string]string{
		inbox.ReasonTooOld: "it was too old for the agent to recognise it. The agent may or may not have it; answer again only if it still applies.",
		inbox.ReasonGone:   "the relay no longer holds this question.",
	},
	resolved: map[string]string{
		aep.ResolutionAuto:      "Resolved by the agent on its own",
		aep.ResolutionDismissed: "Dismissed by the agent",
		"":                      "Answered; the answer itself was not in the event stream",
	},
	rejected: map[string]string{
		aep.ReasonInvalid:      "The agent did not accept the answer. Correct it below and send it again.",
		aep.ReasonBusy:         "The agent was busy and did not take the answer. Send it again in a moment.",
		aep.ReasonRefused:      "The agent refused the answer.",
		aep.ReasonUnsupported:  "The agent does not take this kind of answer.",
		aep.ReasonUnauthorized: "The agent does not take answers from this UI.",
		"":                     "The agent rejected the answer%s.",
	},
	failed: map[string]string{
		"no-route":              "Not delivered: the agent is not connected. Your answer is kept.",
		"unauthorized":          "Not delivered: this UI has no control token for the relay.",
		"ambiguous":             "Not delivered: the relay could not tell which agent should get it. Your answer is kept.",
		"unsupported":           "Not delivered: the relay does not route answers for this request. Your answer is kept.",
		inbox.ReasonTimeout:     "No answer from the agent in time; it may still act.",
		inbox.ReasonUnreachable: "Not sent; your answer is kept. The relay could not be reached.",
		"":                      "Not delivered%s. Your answer is kept.",
	},
	refusalPage: map[string]string{
		"gone":            "This question is no longer open",
		"not-found-title": "There is no page here",
		"not-found":       "This UI has no page at this address (a mistyped or an old link). The questions are on the inbox.",
		"gone-open":       "This server does not have this question any more: it was answered, it expired or was cleared, or the server restarted. The questions still open are on the inbox.",
		"too-large-title": "Your answer is too large to send",
		"too-large":       "Your answer is larger than this UI accepts, so nothing was sent. Go back (the browser's Back button keeps what you typed), shorten it and send it again.",
		"unread-title":    "Your answer could not be read",
		"unread":          "The browser's post could not be read, so nothing was sent. Go back (the browser's Back button keeps what you typed) and send it again; if that fails, reload the page.",
	},
	refusal: map[error]Refusal{
		inbox.ErrNotFound:        {"gone", "This server does not have this question any more (it restarted, or the question was cleared). Your answer was not sent."},
		inbox.ErrWatchOnly:       {"watch_only", "This UI has no control token for the relay, so it cannot send answers. Your answer was not sent."},
		inbox.ErrReadOnly:        {"read_only", "Your role here is viewer: you can read questions, not answer them. Your answer was not sent."},
		errNoToken:               {"no_token", "This form is missing its token. Reload the page and send your answer again."},
		inbox.ErrInFlight:        {"in_flight", "An answer to this question is already on its way to the agent. Wait for its reply before sending another."},
		inbox.ErrOtherInFlight:   {"in_flight", "%s already answered this from another UI, and that answer is on its way to the agent. Nothing was sent."},
		errSentHere:              {"in_flight", "An answer was already sent from this UI and is on its way to the agent. Nothing was sent."},
		inbox.ErrPeerQueued:      {"in_flight", "An answer to this question is queued on another instance of this UI, to be sent when the relay is back. Nothing was sent."},
		inbox.ErrExpired:         {"expired", "This question expired before your answer was sent. Nothing was sent to the agent."},
		inbox.ErrInformational:   {"informational", "This question is answered in the agent's own interface, not here. Nothing was sent."},
		inbox.ErrMalformed:       {"malformed", "This request is malformed, so it cannot be answered here. Nothing was sent."},
		inbox.ErrTooManyControls: {"over_budget", "This question has too many options to show safely, so it is answered in the agent's own interface, not here. Nothing was sent."},
		errTimedOut:              {"settled", "The agent stopped waiting for this answer (timed out). Nothing was sent."},
		errEnded:                 {"settled", "The agent's session ended before your answer was sent. Nothing was sent."},
		errAnsweredBy:            {"settled", "This question was already answered by %s. Nothing was sent."},
		inbox.ErrSettled:         {"settled", "This question was already answered elsewhere. Nothing was sent."},
		inbox.ErrNotRecorded:     {"not_recorded", "Your answer could not be recorded, so nothing was sent. Send it again in a moment."},
	},
	note: map[string]string{
		"watch-only":         "Watch-only: this UI has no control token for the relay, so it cannot send answers.",
		"read-only":          "Your role here is viewer: you can read this question, not answer it.",
		"not-connected":      "The agent is not connected: an answer sent now will not reach it.",
		"no-control":         "The agent is connected but takes no answers over the relay (it does not accept control.attention.respond): an answer sent now will be refused.",
		"ambiguous":          "More than one agent claims this session: the relay will refuse an answer sent now.",
		"refused-other":      "An answer from %s was refused by the agent.",
		"answering":          "Someone else is answering: %s sent an answer.",
		"unacked-other":      "An answer from %s got no reply from the agent in time.",
		"refused-other-here": "An answer sent earlier from this UI was refused by the agent.",
		"answering-here":     "An answer was already sent from this UI.",
		"unacked-other-here": "An answer sent earlier from this UI got no reply from the agent in time.",
		"another":            "another sender",
		"look-alike":         "These choices look alike: check which one you mean before you choose.",
		"look-alike-options": "These options look alike: check which one you mean before you choose.",
	},
	reach: map[string]string{
		"yes":        "connected",
		"no-control": "connected, takes no answers here",
		"ambiguous":  "claimed by more than one agent",
		"no":         "not connected",
		"unknown":    "connection unknown",
	},
	page: map[string]string{
		// The feed has not connected yet (the AEP reference relay sends
		// /stream's headers only with its first ping, up to 25 s later).
		"connecting":  "Connecting to the relay",
		"gap":         "events may be missing for session ",
		"gap-advice":  "the relay no longer held them when aepforms caught up, so a question asked then may not show here. If that agent seems to be waiting, answer it in the agent itself. This note stays until aepforms restarts.",
		"unreachable": "aepforms is not reachable; what you typed is kept in this browser. Sending is off until it is back.",
		// A page of many requests (window.go): the most urgent in full,
		// the rest as rows, pages of rows, counts that filter.
		"single":       "This is one question's own page; {n} pending in the inbox.",
		"single-none":  "This is one question's own page; nothing else is waiting.",
		"single-all":   "See all questions",
		"window":       "Showing %s of %s pending: the %s most urgent in full, the rest as rows.",
		"window-later": "Showing %s more of %s pending, as rows.",
		"next-page":    "Next %s questions",
		"first-page":   "Back to the most urgent",
		"by-agent":     "By agent",
		"by-kind":      "By kind",
		"group-count":  "%s waiting",
		"open-row":     "Open this question",
		"settled-more": "Older settled questions are in History.",
		"no-prompt":    "(no question text)",
	},
	status: map[string]string{
		"dropped":        "%s: %s %s dropped",
		"dropped-others": "other agents: %s %s dropped",
		"dropped-lead":   "The inbox was full. ",
		"dropped-tail":   ", oldest first.",
	},
	history: map[string]string{
		"title":         "History · aepforms",
		"heading":       "Answers sent",
		"off":           "History is off: this UI keeps no answer journal, so there is nothing to show.",
		"empty":         "No answers sent yet. Each answer sent from this UI is listed here.",
		"none-match":    "No answers match this filter.",
		"no-name":       "an operator who gave no name",
		"who-named":     "Who answered is the operator who signed in with their own name and secret.",
		"who-label":     "Who answered is the name typed at sign-in with the shared operator secret: a label, not a proof of identity.",
		"who-open":      "This UI has no operator secret, so answers carry no name.",
		"no-agent":      "unnamed agent",
		"bad-since":     "Enter the “Sent from” time as a date and time, for example 2026-03-01T12:00.",
		"bad-until":     "Enter the “Sent before” time as a date and time, for example 2026-03-01T18:00.",
		"bad-range":     "The “Sent from” time must be before the “Sent before” time.",
		"bad-outcome":   "Choose an outcome from the list.",
		"bad-cursor":    "This page of the history is out of date. Start again from the newest answers.",
		"no-question":   "(no question text)",
		"cut":           "The first %d characters of the question are shown; the export holds all of it.",
		"recorded":      "What the agent recorded",
		"recorded-same": "The agent recorded this answer as sent",
		"recorded-as":   " (%s)",
		// The agent's "by" naming the rule that sent the answer, in
		// the rule's words rather than its id ("aepforms/rule:01J…").
		"recorded-rule": "by rule ‘%s’",
		"rule-none":     "Anyone",
		"rule-any":      "Any rule",
		// An accepted answer the agent then recorded: settled for good.
		"outcome-recorded": "Accepted and recorded by the agent",
	},
	answered: map[string]string{
		"lead":    "Sent by",
		"no-name": "an operator who gave no name",
		"history": "In History",
	},
	card: map[string]string{
		"one-more": "(and 1 more question)",
		// A card whose words were withheld, without a prompt to head it.
		"placeholder-title": "from %s",
		"more":              "(and %d more questions)",
		"asked":             "asked",
		"answer-by":         "answer by %s",
		"passed":            "Deadline passed",
		"left":              "%s left",
		"details":           "Details",
		"by-you":            "you (%s)",
		"you":               "you",
		"ago":               " · %s",
		// A claim ("I’m on it") and an assignment.
		"claim":              "I’m on it",
		"claim-release":      "Not on it any more",
		"claim-take-over":    "Take it over",
		"claim-lead":         "is on it",
		"claim-mine":         "You are on it",
		"claim-confirm":      "Your answer was not sent. To answer anyway, send it again.",
		"claim-confirm-gone": "Your answer was not sent: the question was claimed. Send it again to answer.",
		"assigned":           "Assigned to",
		"assigned-team":      "Assigned to team",
		"assigned-by":        "by",
		"assign-label":       "Assign to",
		"assign":             "Assign",
		"assign-none":        "Nobody",
		"assign-people":      "People",
		"assign-teams":       "Teams",
		"assign-team":        "%s (team)",
		"filter-all":         "All questions",
		"filter-mine":        "Mine",
		"filter-unclaimed":   "Unclaimed",
	},
	via: map[string]string{
		"oob":               "in the agent's own window",
		"control":           "from this page",
		"rule":              "by a rule of this UI",
		"control-elsewhere": "from another aepforms page",
		"":                  "via %s",
	},
	empty: map[string]string{
		"title":   "No questions waiting. New ones appear here as agents ask.",
		"connect": "To connect an agent",
		"relay":   "Agents post to the relay at",
		"token":   "The relay token agents need is in",
		"no-file": "The relay token is the one this UI was started with (--token or AEP_TOKEN).",
		"demo":    "Try it with the demo agent:",
		"adapter": "An AEP adapter needs two things: the relay URL and the token. It sends its questions to {relay}/socket (or POSTs them to {relay}/events) with the token as a bearer token.",
	},
	outcomes: []outcomeWords{
		{inbox.SubmissionQueued, "Queued, waiting for the relay", "Queued", "progress"},
		{inbox.SubmissionSending, "Sent, no reply yet", "Sent", "progress"},
		{inbox.SubmissionAccepted, "Accepted by the agent", "Accepted", "success"},
		{inbox.SubmissionRejected, "Rejected by the agent", "Rejected", "error"},
		{inbox.SubmissionFailed, "Not delivered", "Not delivered", "error"},
		{inbox.SubmissionNotSent, "Not sent again after a restart", "Not sent", "warning"},
		{inbox.SubmissionSuperseded, "Superseded: the question settled first", "Superseded", "neutral"},
		{inbox.SubmissionUnknown, "Outcome unknown", "Unknown", "warning"},
		{inbox.SubmissionWithdrawn, "Undone: not sent", "Undone", "neutral"},
	},
	historyReason: map[inbox.SubmissionState]map[string]string{
		inbox.SubmissionQueued: {
			inbox.ReasonNoRoute: "Waiting for the agent to reconnect: it was not on the relay; sent when it is back",
		},
		inbox.SubmissionSending: {
			inbox.ReasonRelayLost: "the relay connection was lost; it is sent again when the relay is back",
			inbox.ReasonTimeout:   "no reply from the agent in time; it may still act. It is sent again when the relay next connects, or by \"Send the same answer again\" on its card",
		},
		inbox.SubmissionUnknown: {
			inbox.ReasonRestart: "sent before the restart; outcome unknown",
			inbox.ReasonTooOld:  "sent, no reply, and not sent again: older than the resend limit; the agent may or may not have acted",
		},
		inbox.SubmissionSuperseded: {
			inbox.ReasonRelayLost: "sent, no reply; the question settled before it was sent again",
			inbox.ReasonTimeout:   "sent, no reply; the question settled before it was sent again",
		},
	},
	historyFailed: map[string]string{
		inbox.ReasonReplaced:    "replaced by a different answer; the agent may still have acted on it",
		inbox.ReasonTimeout:     "no reply from the agent in time; it may still have acted",
		inbox.ReasonUnreachable: "the relay could not be reached",
		"no-route":              "the agent was not connected",
		"unauthorized":          "this UI had no control token for the relay",
		"":                      "%s",
	},
	undo: map[string]string{
		"lead":       "Sending in",
		"lead-all":   "All of them sending in",
		"button":     "Undo",
		"button-all": "Undo all %d",
		"too-late":   "Not undone: the answer had already left (its few seconds to undo passed), or another aepforms instance holds it. Its card says what became of it.",
		"not-kept":   "Undone, and nothing was sent, but the journal could not record it yet; it records it when it can.",
	},
	flow: map[string]string{
		"note-summary": "Add a note",
		// An owed answer (sent, no reply yet): the same again, or
		// explicitly a different one.
		"send-again":          "Send the same answer again",
		"differently":         "Answer differently",
		"differently-warning": "Your first answer may still reach the agent and act. A different answer is sent as a second answer to this question; the agent decides which it takes.",
		"note-label":          "Your note to the agent",
		"note-hint":           "It is sent with the option you press below.",
		"note-only":           "Send the note only",
		"note-only-hint":      "Without an option, the agent decides what the note means, and may refuse it.",
		"hide":                "Hide from this page",
		"clear-settled":       "Clear settled",
		"no-more":             "No more questions waiting after this one.",
		"at-first":            "This is the first question waiting.",
		"list-label":          "Questions waiting",
		"list-order":          "Order",
		"order-deadline":      "Nearest deadline first",
		"order-oldest":        "Oldest first",
		"order-agent":         "By agent",
		"pin-permissions":     "Permissions first",
		"list-back":           "Back to the list",
		"withdrawn-title":     "No longer open",
		"keys-button":         "Keyboard shortcuts",
		"keys-title":          "Keyboard shortcuts",
		"keys-toggle":         "Use single-key shortcuts (j, k, 1–9, o, x, c, ?)",
		"keys-close":          "Close",
		"keys-off-note":       "Single-key shortcuts never act while you type in a text box.",
		"key-j":               "Next question waiting, in the list's order (on to the next page)",
		"key-k":               "Previous question waiting",
		"key-shift-jk":        "Move and select for a batch answer (a range)",
		"key-1-9":             "Select the n-th choice or option (never sends)",
		"key-o":               "Type in Other",
		"key-x":               "Select for a batch answer, or unselect",
		"key-c":               "I’m on it: tell the other operators you are answering it",
		"key-send":            "Send the question you are in (an option card once an option is selected)",
		"key-esc":             "Leave a text box",
		"key-help":            "Show or hide this list",
	},
}

// outcomeWords is one submission state as the history names it (Label on
// a row, Short in the outcome filter), with the tone of its line.
type outcomeWords struct {
	State        inbox.SubmissionState
	Label, Short string
	Tone         string
}

// Refusal is why an answer post sent nothing, in the operator's words: a
// code (the page's problem code) and the message.
type Refusal struct {
	Code, Message string
}

// viaRule is how an answer a rule of this UI sent reads (in words.via):
// it went over control, as a pressed answer does.
const viaRule = "rule"

// Refusals that are the UI's own, not the domain's.
var (
	errNoToken    = errors.New("view: no form token")
	errTimedOut   = errors.New("view: timed out")
	errEnded      = errors.New("view: session ended")
	errAnsweredBy = errors.New("view: answered by")
	errSentHere   = errors.New("view: sent from this UI before its journal")
)

// Refusals the answer handler gives before asking the domain.
var (
	RefusalNoToken = words.refusal[errNoToken]
	RefusalGone    = words.refusal[inbox.ErrNotFound]
)

// RefusalOf words a refusal of the domain (the verdict's Refusal or
// Closed, inbox.Viewer.Refusal, BeginSubmission) for the card whose
// verdict is vd (the zero Verdict for a refusal of no one card); false
// when err is not one. Who answered is the verdict's, as the card says.
func RefusalOf(err error, vd inbox.Verdict) (Refusal, bool) {
	if errors.Is(err, inbox.ErrOtherInFlight) {
		a := vd.Answering
		if a != nil && a.Own {
			return words.refusal[errSentHere], true
		}
		who := words.state["answering-someone"]
		if a != nil && senderOf(a) != "" {
			who = senderOf(a)
		}
		r := words.refusal[inbox.ErrOtherInFlight]
		r.Message = fmt.Sprintf(r.Message, who)
		return r, true
	}
	if errors.Is(err, inbox.ErrPeerQueued) {
		return words.refusal[inbox.ErrPeerQueued], true // before ErrInFlight, which it also is
	}
	if errors.Is(err, inbox.ErrSettled) {
		switch {
		case vd.Line == inbox.LineTimedOut:
			return words.refusal[errTimedOut], true
		case vd.Line == inbox.LineEnded:
			return words.refusal[errEnded], true
		case vd.Answered != nil && vd.Answered.By != "":
			r := words.refusal[errAnsweredBy]
			r.Message = fmt.Sprintf(r.Message, vd.Answered.By)
			return r, true
		}
	}
	for e, r := range words.refusal {
		if errors.Is(err, e) {
			return r, true
		}
	}
	return Refusal{}, false
}

// rejectedText says what a control.rejected reason means to the operator.
func rejectedText(reason string) string {
	if t, ok := words.rejected[reason]; ok && reason != "" {
		return t
	}
	return fmt.Sprintf(words.rejected[""], phrase(" (", reason)+closeParen(reason))
}

// sentBy says who sent a restored answer and when: the operator's name
// (or "this UI") and the exact time.
func sentBy(sub *inbox.Submission) (who, at string) {
	who = sub.By
	if who == "" {
		who = words.state["resumed-by"]
	}
	return who, exactTime(sub.At)
}

// resumedText is the state line of an answer restored after a restart.
func resumedText(sub *inbox.Submission) string {
	who, at := sentBy(sub)
	switch {
	case sub.State == inbox.SubmissionSuperseded && sub.Reason != "":
		// Sent (owed) and not sent again: the question settled first.
		return fmt.Sprintf(words.state["sent-superseded"], who, at)
	case sub.State == inbox.SubmissionUnknown && sub.Reason == inbox.ReasonTooOld:
		return fmt.Sprintf(words.state["unknown-too-old"], who, at)
	case sub.State == inbox.SubmissionUnknown:
		return fmt.Sprintf(words.state["unknown-restart"], who, at)
	case sub.State == inbox.SubmissionSending && sub.Reason == inbox.ReasonRestart:
		return fmt.Sprintf(words.state["resumed-waiting"], who, at)
	case sub.State == inbox.SubmissionFailed && sub.Reason == inbox.ReasonReplaced:
		return fmt.Sprintf(words.state["replaced"], who, at)
	}
	if !sub.Resumed {
		// Not sent in this run of aepforms: it was queued while the relay
		// was away (a restart's answers are Resumed).
		switch sub.State {
		case inbox.SubmissionNotSent:
			why, ok := words.queuedNotSent[sub.Reason]
			if !ok {
				why = words.queuedNotSent[""]
			}
			return fmt.Sprintf(words.state["queued-not-sent"], who, at, why)
		case inbox.SubmissionSuperseded:
			return fmt.Sprintf(words.state["queued-superseded"], who, at)
		}
	}
	switch sub.State {
	case inbox.SubmissionAccepted:
		return fmt.Sprintf(words.state["resumed-accepted"], who, at)
	case inbox.SubmissionNotSent:
		return fmt.Sprintf(words.state["not-sent"], who, at, words.notSent[sub.Reason])
	case inbox.SubmissionSuperseded:
		return fmt.Sprintf(words.state["superseded"], who, at)
	}
	return fmt.Sprintf(words.state["resumed"], who, at)
}

// owedText is the state line of an answer sent and waiting for the
// agent: owed (no reply in time, or the relay lost), not sent again yet
// after a restart, or sent again after one; "" for one simply sending.
// An answer with no reply in time is sent again by itself only when the
// relay connects again: reach (the agent's, known only while the relay
// is connected) says which of the two lines is true now.
func owedText(sub *inbox.Submission, reach inbox.Reach) string {
	switch {
	case sub.Reason == inbox.ReasonRelayLost:
		return words.state["relay-lost"]
	case sub.Reason == inbox.ReasonTimeout && reach.Known():
		return words.state["no-reply"]
	case sub.Reason == inbox.ReasonTimeout:
		return words.state["no-reply-away"]
	case sub.Resumed:
		return resumedText(sub)
	}
	return ""
}

// answeringText is the state line of a card locked by a command no answer
// of this UI's journal sent (inbox.Card.Answering), and the agent text in
// it.
func answeringText(r *inbox.Responder) (string, []string) {
	accepted := r.Ack == inbox.SubmissionAccepted
	if r.Own {
		if accepted {
			return words.state["sent-here-accepted"], nil
		}
		return words.state["sent-here"], nil
	}
	key := "answering"
	if accepted {
		key = "answering-accepted"
	}
	who := senderOf(r)
	if who == "" {
		return fmt.Sprintf(words.state[key], words.state["answering-someone"]), nil
	}
	return fmt.Sprintf(words.state[key], who), []string{who}
}

// failedText says why an answer did not reach the agent.
func failedText(reason string) string {
	if t, ok := words.failed[reason]; ok && reason != "" {
		return t
	}
	return fmt.Sprintf(words.failed[""], phrase(" (", reason)+closeParen(reason))
}

// FlowWords are the answer flow's words (words.flow), for the components.
type FlowWords struct {
	Hide, ClearSettled, NoMore        string
	AtFirst, ListLabel, ListOrder     string
	OrderDeadline, OrderOldest        string
	OrderAgent, PinPermissions        string
	ListBack, WithdrawnTitle          string
	KeysButton, KeysTitle, KeysToggle string
	KeysClose, KeysOffNote, Refusing  string
	Keys                              []KeyWords
}

// KeyWords is one keyboard shortcut as the overlay lists it.
type KeyWords struct{ Keys, What string }

// Flow is the answer flow's words.
var Flow = FlowWords{
	Hide: words.flow["hide"], ClearSettled: words.flow["clear-settled"], NoMore: words.flow["no-more"],
	AtFirst: words.flow["at-first"], ListLabel: words.flow["list-label"], ListOrder: words.flow["list-order"],
	OrderDeadline: words.flow["order-deadline"], OrderOldest: words.flow["order-oldest"],
	OrderAgent: words.flow["order-agent"], PinPermissions: words.flow["pin-permissions"],
	ListBack: words.flow["list-back"], WithdrawnTitle: words.flow["withdrawn-title"],
	KeysButton: words.flow["keys-button"], KeysTitle: words.flow["keys-title"], KeysToggle: words.flow["keys-toggle"],
	KeysClose: words.flow["keys-close"], KeysOffNote: words.flow["keys-off-note"],
	Keys: []KeyWords{
		{"j", words.flow["key-j"]},
		{"k", words.flow["key-k"]},
		{"1 – 9", words.flow["key-1-9"]},
		{"o", words.flow["key-o"]},
		{"x", words.flow["key-x"]},
		{"c", words.flow["key-c"]},
		{"Shift + j, Shift + k", words.flow["key-shift-jk"]},
		{"Ctrl + Enter, ⌘ + Enter", words.flow["key-send"]},
		{"Esc", words.flow["key-esc"]},
		{"?", words.flow["key-help"]},
	},
}

// noteWords words a form's note (form.Reply.Note) and ties its hints to
// the controls they describe.
func noteWords(f *form.View) {
	if f == nil || f.Reply == nil || !f.Reply.Note {
		return
	}
	r := f.Reply
	r.Label, r.Hint = words.flow["note-label"], words.flow["note-hint"]
	r.Summary, r.Only, r.OnlyHint = words.flow["note-summary"], words.flow["note-only"], words.flow["note-only-hint"]
	ids := []string{}
	if r.Error != "" {
		ids = append(ids, r.ErrorID)
	}
	r.DescribedBy = strings.Join(append(ids, r.HintID), " ")
}

// pushWords are the words of Web Push: the notifications a
// device shows and the page's "Notify me on this device" controls. Kept
// in this file with the rest of the UI's wording.
var pushWords = map[string]string{
	// Notifications.
	"new-title":       "%s asks",
	"summary-title":   "%d new questions",
	"summary-body":    "Open aepforms to answer them.",
	"answered-by":     "Answered by %s",
	"answered":        "Answered",
	"expired":         "Expired",
	"timed-out":       "Timed out",
	"ended":           "The session ended",
	"closed":          "No longer open",
	"deadline":        "Answer by %s",
	"hidden-text":     "A question is waiting.",
	"kind-permission": "A permission request",
	"kind-input":      "A question",
	"kind-review":     "A review request",
	"kind-form":       "A form to fill in",
	"sent":            "Sent: %s",
	"answer-failed":   "Not sent from the notification: open the card to answer.",
	"no-agent":        "An agent",
	// Device failures shown in the device list (never the push
	// service's own response).
	"failed-status":  "The push service refused the last notification (HTTP %d).",
	"failed-network": "The push service could not be reached.",
	// The page's controls and their messages.
	"subscribe":         "Notify me on this device",
	"unsubscribe":       "Stop notifying this device",
	"allow-actions":     "Allow answering from notifications",
	"sound":             "Play a sound for new questions",
	"off-subject":       "Notifications to your devices are not set up on this server.",
	"off-insecure":      "Notifications need this page over HTTPS (or on localhost).",
	"off-unsupported":   "This browser cannot receive push notifications. On iPhone, add aepforms to the home screen first (Share, Add to Home Screen) and open it from there.",
	"denied":            "Notifications are blocked for this site in the browser's settings.",
	"timeout":           "The browser's push service did not answer. Check the connection and try again.",
	"failed":            "This device could not be subscribed. Try again.",
	"subscribing":       "Turning on notifications for this device…",
	"subscribed":        "This device will be notified of new questions while no aepforms page is in view.",
	"unsubscribed":      "This device will not be notified.",
	"subscribe-refused": "The server refused this device's push address.",
	// The device list: one line per device of the operator.
	"devices":      "Devices notified",
	"device-this":  "This device",
	"device-other": "Another device",
	"device-line":  "%s, since %s",
	"device-fail":  "%s, since %s. Last failure (%s): %s",
}

// PushWord is the push wording for key, formatted with args when given.
func PushWord(key string, args ...any) string {
	w, ok := pushWords[key]
	if !ok {
		panic("view: no push word " + key)
	}
	if len(args) > 0 {
		return fmt.Sprintf(w, args...)
	}
	return w
}

// PushSettled is what a pushed question's notification says once its
// card can no longer be answered, worded from the card's verdict (who
// answered is the verdict's, as on the card's state line).
func PushSettled(vd inbox.Verdict) string {
	if a := vd.Answered; a != nil {
		if a.By != "" {
			return PushWord("answered-by", a.By)
		}
		return PushWord("answered")
	}
	switch vd.Line {
	case inbox.LineExpired:
		return PushWord("expired")
	case inbox.LineTimedOut:
		return PushWord("timed-out")
	case inbox.LineEnded:
		return PushWord("ended")
	case inbox.LineResolved, inbox.LineAnswered:
		return PushWord("answered")
	}
	return PushWord("closed")
}
