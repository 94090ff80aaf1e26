package rules

import (
	"context"
	"strings"
	"unicode"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// DefaultPromptBytes is the prompt budget a rule assumes when the
// Runner's Config gives none: a card's default (16 KiB).
const DefaultPromptBytes = markdown.MaxBytes

// Question is a request's question as its card shows it: what a rule
// compares.
type Question struct {
	// Text is the visible text (markdown.Doc.Visible): the words the
	// card shows after Markdown, whitespace normalised.
	Text string
	// Hidden is set when the prompt carries text the card does not
	// show: past the prompt budget, a Markdown reference definition, a
	// link's title, an entity's name, control or format characters. Such
	// a request is never answered by a rule: the operator did not read
	// all of it.
	Hidden bool
	// Command is the first inline code or code block of the question
	// ("" when none): what a wider scope is pre-filled from.
	Command string
}

// QuestionOf reads prompt as a card with a prompt budget of budget bytes
// (0: DefaultPromptBytes) shows it.
func QuestionOf(prompt string, budget int) Question {
	if budget <= 0 {
		budget = DefaultPromptBytes
	}
	doc := markdown.Parse(prompt, markdown.Options{})
	q := Question{Text: doc.Visible(), Command: firstCode(doc.Blocks)}
	q.Hidden = len(prompt) > budget || invisible(prompt) || !shows(q.Text, prompt)
	return q
}

// invisible reports whether t holds a character that shows nothing or
// moves other text: controls other than line breaks and tabs, and format
// characters (zero-width, bidirectional overrides).
func invisible(t string) bool {
	return strings.ContainsFunc(t, func(r rune) bool {
		return (unicode.Is(unicode.Cc, r) && r != '\n' && r != '\r' && r != '\t') || unicode.Is(unicode.Cf, r)
	})
}

// shows reports whether visible holds every letter and digit of src, and
// every character that chains commands (chainChars), as many times:
// Markdown's markup is other punctuation, so one of these missing from
// what the card shows was hidden by the markup (a reference definition,
// a link title, an entity), even a definition made of separators alone.
func shows(visible, src string) bool {
	count := map[rune]int{}
	for _, r := range src {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(chainChars, r) {
			count[r]++
		}
	}
	for _, r := range visible {
		if n, ok := count[r]; ok {
			count[r] = n - 1
		}
	}
	for _, n := range count {
		if n > 0 {
			return false
		}
	}
	return true
}

func firstCode(bs []markdown.Block) string {
	for _, b := range bs {
		switch b.Kind {
		case markdown.Code:
			return strings.TrimSpace(b.Text)
		case markdown.Para, markdown.Heading:
			if t := firstMono(b.Inlines); t != "" {
				return t
			}
		case markdown.List:
			for _, it := range b.Items {
				if t := firstCode(it.Blocks); t != "" {
					return t
				}
			}
		case markdown.Quote:
			if t := firstCode(b.Blocks); t != "" {
				return t
			}
		}
	}
	return ""
}

func firstMono(in []markdown.Inline) string {
	for _, i := range in {
		if i.Kind == markdown.Mono {
			return strings.TrimSpace(i.Text)
		}
		if t := firstMono(i.Children); t != "" {
			return t
		}
	}
	return ""
}

// Separators are what chains or substitutes a command: a permission
// rule wider than the exact question never answers a question holding
// more of one than its own text does (as Claude Code refuses a prefix
// rule for a compound command). A single & runs the next command too
// (the first in the background), and && and || are counted as two of
// theirs, so "make && make" lets no further & through; <( and >( are
// process substitutions.
var Separators = []string{";", "&", "|", "`", "$(", "<(", ">(", "\n"}

// chainChars are the characters of Separators that Markdown never uses as
// markup: shows counts them as it counts letters.
const chainChars = ";&|$"

// compound returns the first separator question holds more often than
// pattern does, "" when none: a pattern holding one pipe does not let a
// second through.
func compound(question, pattern string) string {
	for _, s := range Separators {
		if strings.Count(question, s) > strings.Count(pattern, s) {
			return s
		}
	}
	return ""
}

// Lead is what the wider scopes are pre-filled with for question q
// (never empty for a question with any text): contains, the command's
// first word or two (the question's own when it has no command, or when
// they are not on one line of it); prefix, the visible text up to the end
// of those words when they are on its first line, else that line's first
// four words.
func Lead(q Question) (prefix, contains string) {
	words := func(t string, n int) string {
		f := strings.Fields(t)
		return strings.Join(f[:min(n, len(f))], " ")
	}
	// Each goes in a one-line text input, which drops line breaks: so
	// each is one line of the question, words joined as the line joins
	// them, or the rule would answer nothing, not even this question.
	first, _, _ := strings.Cut(q.Text, "\n")
	contains = words(q.Command, 2)
	if contains == "" || !strings.Contains(q.Text, contains) {
		contains = words(first, 2)
	}
	if i := strings.Index(q.Text, contains); i >= 0 && contains != "" && !strings.Contains(q.Text[:i], "\n") {
		return q.Text[:i+len(contains)], contains
	}
	return words(first, 4), contains
}

// Seen is what a request shows its operators, read once for all the
// rules: its question, and the instance of the connection that claimed
// its session ("" when the relay's roster names none).
type Seen struct {
	Question Question
	Instance string
}

// see reads card c's question as its operators see it; its connection
// is read apart (claimant), only when a rule needs it.
func (r *Runner) see(c inbox.Card) Seen {
	return Seen{Question: QuestionOf(c.Request.Prompt, r.cfg.PromptBytes)}
}

// claimant is the instance the relay's roster names for card c's
// session, "" when none (or no roster).
func (r *Runner) claimant(ctx context.Context, c inbox.Card) string {
	if r.cfg.Claimant == nil {
		return ""
	}
	return r.cfg.Claimant(ctx, c.Key.Session)
}

// See reads card c as its operators see it, as the Runner does: what a
// rule made from it keeps (its question, its connection's instance).
func (r *Runner) See(ctx context.Context, c inbox.Card) Seen {
	s := r.see(c)
	s.Instance = r.claimant(ctx, c)
	return s
}
