package routing

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/inbox"
)

// questionRunes is how much of a question's first line a chat message
// quotes.
const questionRunes = 200

// newText is the chat message of a new question for team: who asks,
// what, and the link to its own page.
func newText(c inbox.Card, team, link string) string {
	return "New question for " + team + " from " + chatEscape(c.Agent) + ": " + quoted(c) + withLink(link)
}

// reminderText is the reminder of a question unanswered for waited.
func reminderText(c inbox.Card, team string, waited time.Duration, link string) string {
	return "Reminder for " + team + ": unanswered for " + words(waited) + ", " + chatEscape(c.Agent) + " still waits: " + quoted(c) + withLink(link)
}

// escalationText is the message to team to of a question team from (or
// the operator or team it was assigned to) has not answered for waited.
func escalationText(c inbox.Card, from, to string, waited time.Duration, link string) string {
	return "Escalated to " + to + ": " + from + " has not answered for " + words(waited) + ", " + chatEscape(c.Agent) + " still waits: " + quoted(c) + withLink(link)
}

// assignedText is the chat message to team a.To of its assignment, in
// the assigner's words: "ann assigned you (oncall) a question from
// claude-code: “Deploy?” (form). Answer it here: …".
func assignedText(c inbox.Card, a inbox.Assignment, link string) string {
	by := "An operator"
	if a.By != "" {
		by = chatEscape(a.By)
	}
	return by + " assigned you (" + a.To + ") a question from " + chatEscape(c.Agent) + ": " + quoted(c) + withLink(link)
}

// quoted is the question's first line, cut, in quotes, with its kind.
func quoted(c inbox.Card) string {
	line, _, _ := strings.Cut(strings.TrimSpace(c.Request.Prompt), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > questionRunes {
		line = string([]rune(line)[:questionRunes]) + "…"
	}
	kind := c.Request.Kind
	if kind == "" {
		kind = "question"
	}
	return "“" + chatEscape(line) + "” (" + chatEscape(kind) + ")"
}

func withLink(link string) string {
	if link == "" {
		return "."
	}
	return ". Answer it here: " + link
}

// chatEscape makes agent text plain in a Slack or Mattermost message:
// &, < and > are Slack's markup (links, mentions such as <!channel>);
// Mattermost renders the text as Markdown, where @channel, @all, @here
// and @name mention and [words](address) links (or, after !, shows an
// image): a zero-width space after each @ and between ] and ( keeps them
// the words they are, in either. A line break (\r alone is one to
// Markdown) or another control character is a space: the message is one
// line, so no line of it is the agent's own (a heading, a list, a
// reference link's definition that makes "[Approve][1]" a link).
func chatEscape(s string) string {
	return chatPlain.Replace(strings.Map(oneLine, s))
}

func oneLine(r rune) rune {
	if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
		return ' '
	}
	return r
}

var chatPlain = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u200b", "](", "]\u200b(")

// words says a wait: "45 s", "4 min", "2 h 5 min".
func words(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/time.Hour)) + " h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + " min"
}
