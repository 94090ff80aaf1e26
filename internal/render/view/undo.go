package view

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
)

// UndoView is "Undo" for answers whose commands this UI holds for the
// undo window (inbox.Verdict.Undo): a form posting each answer's
// "{card} {command}" (Values), and each batch's id whose answers it
// takes back whole (Batches), to Action. On a card it takes back that
// card's answer; in the page's undo bar, one answer or all of them (a
// batch's).
type UndoView struct {
	Action string
	Values []string
	// Batches are the ids of the batches (their form's token) an Undo of
	// several takes back whole: a batch of any size is one value of its
	// form, where its answers one by one would pass what a form may carry.
	Batches []string
	// Batch is the id of the batch a card's answer was sent in ("" for
	// an answer of its own).
	Batch string
	// Sent is what was sent, in the operator's words ("Deny"); Question
	// the question it answers (the bar names both).
	Sent, Question string
	// Lead is the words before the time left ("Sending in"), Left the
	// time left as the page was drawn ("5 s") and LeftMS in
	// milliseconds, for the page script's countdown.
	Lead, Left string
	LeftMS     int64
	Label      string // the button's words
}

// undoView is card c's Undo while its verdict offers it, nil otherwise.
func undoView(c inbox.Card, vd inbox.Verdict, base string, values []RecordedValue) *UndoView {
	if !vd.Undo {
		return nil
	}
	var sent []string
	for _, v := range values {
		if v.Value != "" {
			sent = append(sent, v.Value)
		}
	}
	batch := ""
	if sub := vd.Submission; sub != nil && sub.CommandID == vd.UndoCommand {
		batch, _ = strings.CutSuffix(sub.Token, "."+string(c.ID))
		if batch == sub.Token {
			batch = ""
		}
	}
	return &UndoView{
		Action: base + "/undo",
		Values: []string{string(c.ID) + " " + vd.UndoCommand},
		Batch:  batch,
		Sent:   strings.Join(sent, ", "),
		Lead:   words.undo["lead"],
		Left:   formatDuration(vd.UndoLeft.Round(time.Second)),
		LeftMS: vd.UndoLeft.Milliseconds(),
		Label:  words.undo["button"],
	}
}

// UndoBar is the page's undo bar: each held answer's Undo (cards'
// views, from Card), and one that takes them all back when there are
// several (a batch). Empty when none. byBatch names each batch among
// them by its id in the Undo of all, not each of its answers: for a
// bar that holds every held answer of its batches (cards unfiltered).
func UndoBar(cards []CardView, base string, byBatch bool) []UndoView {
	var out []UndoView
	var all UndoView
	for _, c := range cards {
		if c.Undo == nil {
			continue
		}
		u := *c.Undo
		out = append(out, u)
		switch {
		case !byBatch || u.Batch == "":
			all.Values = append(all.Values, u.Values...)
		case !slices.Contains(all.Batches, u.Batch):
			all.Batches = append(all.Batches, u.Batch)
		}
		if all.LeftMS == 0 || u.LeftMS > all.LeftMS {
			all.LeftMS, all.Left = u.LeftMS, u.Left
		}
	}
	if len(out) > 1 {
		all.Action, all.Lead = base+"/undo", words.undo["lead-all"]
		all.Label = strings.Replace(UndoAllLabel(), "%d", strconv.Itoa(len(out)), 1)
		out = append(out, all)
	}
	return out
}

// UndoWords say why an Undo took nothing back: too late (the answer left,
// or another instance of aepforms holds it), or the journal could not
// keep the withdrawal.
func UndoWords(notHeld bool) string {
	if notHeld {
		return words.undo["too-late"]
	}
	return words.undo["not-kept"]
}

// UndoAllLabel is the words of the Undo of several answers, "%d" their
// number (the page script fills it in).
func UndoAllLabel() string { return words.undo["button-all"] }

// UndoBatch is one Undo of a batch's answers still held, from their
// cards' views (all of the batch's held answers), naming the batch by
// its id; nil when none is.
func UndoBatch(cards []CardView, base string) *UndoView {
	bar := UndoBar(cards, base, true)
	switch len(bar) {
	case 0:
		return nil
	case 1:
		u := bar[0]
		u.Question, u.Sent = "", ""
		return &u
	}
	return &bar[len(bar)-1]
}
