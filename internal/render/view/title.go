package view

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/render/markdown"
)

// questionTitle gives a form whose prompt only counts its questions
// ("claude-code asks 2 questions", the AEP Claude Code mapping of
// AskUserQuestion, pinned by the conformance fixtures) its first question
// as the heading, so the card is titled by what is asked, not by who
// asks how many: "Which database? (and 1 more question)". The count
// stays in the quote below. Any other prompt is left as it is.
func questionTitle(v *Question, c inbox.Card) {
	r := c.Request
	if r.Kind != aep.KindForm || len(r.Fields) == 0 || !countsQuestions(r.Prompt, c.Agent, len(r.Fields)) {
		return
	}
	first := strings.TrimSpace(Text(r.Fields[0].Label))
	if first == "" {
		return
	}
	title := first
	switch more := len(r.Fields) - 1; more {
	case 0:
	case 1:
		title += " " + words.card["one-more"]
	default:
		title += " " + fmt.Sprintf(words.card["more"], more)
	}
	v.Title, v.TitleAgent = title, true
	// The agent's own words (who asks how many) stay, in the quote.
	v.Prompt.Blocks = markdown.Parse(r.Prompt, markdown.Options{Clean: Text}).Blocks
}

// placeholderTitle heads a card whose words the capture level withheld
// (metadata or none: its labels are ids) with what a person still
// recognises, rather than its kind alone ("Form"): the prompt the adapter
// made from the request's structure in their place ("claude-code asks 2
// questions" for Claude Code's AskUserQuestion, "claude-code requests
// form: AskUserQuestion" at a hop), its first line as it is (never read
// as Markdown), and not repeated in the quote; without a prompt short
// enough for a heading, the agent's name.
func placeholderTitle(v *Question, c inbox.Card) {
	line, rest, _ := strings.Cut(strings.TrimSpace(c.Request.Prompt), "\n")
	line = strings.TrimSpace(Text(line))
	switch {
	case line != "" && utf8.RuneCountInString(line) <= GistRunes && v.Prompt.Cut == nil:
		v.Title, v.TitleAgent = line, true
		v.Prompt.Text = strings.TrimSpace(rest)
		v.Prompt.Long = longPrompt(v.Prompt.Text)
	case c.Agent != "":
		v.Title, v.TitleAgent = fmt.Sprintf(words.card["placeholder-title"], Name(c.Agent)), true
	}
}

// countsQuestions reports whether prompt is "{agent} asks N question(s)".
func countsQuestions(prompt, agent string, n int) bool {
	noun := "questions"
	if n == 1 {
		noun = "question"
	}
	return agent != "" && prompt == fmt.Sprintf("%s asks %d %s", agent, n, noun)
}
