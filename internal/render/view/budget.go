package view

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/inbox"
)

// A card's budgets, so one request cannot make the page heavy: its prompt
// is shown up to Options.PromptBytes, the rest a click away (a large
// prompt is never a reason to refuse an answer); a request needing more
// controls than the inbox offers as a form (inbox.Card.OverBudget, a
// domain rule) is shown read-only with its state line saying why.

// DefaultPromptBytes is how much of a prompt a card shows when
// Options.PromptBytes is 0: 16 KiB.
const DefaultPromptBytes = 16 << 10

// promptBudget is the prompt budget in force: n, or the default.
func promptBudget(n int) int {
	if n <= 0 {
		return DefaultPromptBytes
	}
	return n
}

// promptView is the card's prompt within budget bytes: cut at a character
// boundary (at the last line break in its last quarter, when there is
// one), with the URL of the whole text.
func promptView(id, base, text string, budget int, placeholder bool) Prompt {
	p := Prompt{ID: id + "-prompt", Text: text, Placeholder: placeholder}
	if len(text) > budget {
		cut := cutAt(text, budget)
		p.Text = text[:cut]
		p.Cut = &PromptCut{
			URL:   base + "/cards/" + url.PathEscape(id) + "/prompt",
			Shown: formatBytes(cut),
			Whole: formatBytes(len(text)),
		}
	}
	p.Long = p.Cut != nil || longPrompt(p.Text)
	return p
}

// cutAt is where text is cut to at most budget bytes: at a character
// boundary, at the last line break in its last quarter when there is one.
func cutAt(text string, budget int) int {
	if len(text) <= budget {
		return len(text)
	}
	cut := budget
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(text[:cut], '\n'); nl >= cut*3/4 {
		cut = nl + 1
	}
	return cut
}

// PromptCut says a prompt is shown in part: Shown of Whole ("16 KiB" of
// "8.0 MiB"), the whole text at URL (GET, an escaped fragment the script
// fetches; without the script a link to it).
type PromptCut struct {
	URL          string
	Shown, Whole string
}

// overBudgetText is the state line of a card too big to offer as a form.
func overBudgetText(c inbox.Card) string {
	return fmt.Sprintf(words.state["over-budget"], formatCount(uint64(c.Controls)))
}

// dropLine is the one status line that says which agents' questions the
// inbox let go to stay within its bounds, most first: "The inbox was
// full. kimi-code: 5 500 questions dropped, oldest first." At most
// droppedNamed agents are named. It starts with the UI's words, so no
// agent name is ever capitalised as the start of a sentence.
func dropLine(st inbox.Status) string {
	const droppedNamed = 5
	var parts []string
	var rest uint64
	for i, d := range st.Dropped {
		if i >= droppedNamed {
			rest += d.Count
			continue
		}
		parts = append(parts, fmt.Sprintf(words.status["dropped"], Name(d.Agent), formatCount(d.Count), plural(d.Count, "question", "questions")))
	}
	rest += st.DroppedOthers
	if rest > 0 {
		parts = append(parts, fmt.Sprintf(words.status["dropped-others"], formatCount(rest), plural(rest, "question", "questions")))
	}
	if len(parts) == 0 {
		return ""
	}
	return words.status["dropped-lead"] + strings.Join(parts, "; ") + words.status["dropped-tail"]
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count writes a count for reading, as formatCount does: "10 000".
func Count(n int) string { return formatCount(uint64(max(n, 0))) }

// formatCount writes n with its thousands grouped by a no-break space:
// "449 550".
func formatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u00a0')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatBytes writes a size for reading: "900 bytes", "16 KiB", "8.0 MiB".
func formatBytes(n int) string {
	switch {
	case n < 1<<10:
		return strconv.Itoa(n) + " bytes"
	case n < 1<<20:
		return strconv.Itoa((n+512)>>10) + " KiB"
	default:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
}
