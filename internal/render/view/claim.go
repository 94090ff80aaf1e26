package view

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

// ClaimView is who is on an open question ("I’m on it"), as its card and
// a list row show it: "ann is on it · 2 min".
type ClaimView struct {
	// Who is the claimant's name (agent text never: an operator's).
	Who string
	// Mine is true when the claimant is the operator the card is drawn
	// for: it reads "You are on it".
	Mine bool
	// Lead is the words after the name ("is on it"), or the whole phrase
	// for Mine ("You are on it").
	Lead string
	// SinceISO is when it was claimed, for <time datetime>; SinceText how
	// long ago in short ("2 min"); SinceTitle the exact time.
	SinceISO, SinceText, SinceTitle string
}

// ClaimControl is the card's claim button: "I’m on it", "Take it over"
// when another operator is on it, or for the operator's own claim "Not
// on it any more" (Release).
type ClaimControl struct {
	Action  string // the claim post's URL
	Release bool
	Label   string
	// Assign is the "Assign to" form, nil when none is offered.
	Assign *AssignControl
}

// AssignControl is the card's "Assign to" form: the operators and the
// teams to choose from, the current assignee chosen.
type AssignControl struct {
	Action, Label, Button, None string
	ID                          string // the select's id
	To                          []string
	// Teams are the routes file's teams, each an option whose value is
	// AssignTeamValue of its name; People and TeamsLabel name the two
	// groups of options when there are teams.
	Teams              []AssignOption
	People, TeamsLabel string
	// Current is the current assignee's option value ("" nobody).
	Current string
}

// AssignOption is one team the "Assign to" form offers: its value and
// its words ("oncall (team)").
type AssignOption struct {
	Value, Text string
}

// AssignTeamPrefix starts an assign post's value that names a team
// ("team:oncall"); any other value names an operator.
const AssignTeamPrefix = "team:"

// AssignTeamValue is the assign post's value of team.
func AssignTeamValue(team string) string { return AssignTeamPrefix + team }

// AssignedView is who a question is assigned to: "Assigned to bob by ann".
type AssignedView struct {
	To   string
	Team bool
	Mine bool // assigned to the operator the card is drawn for
	By   string
	// Lead is "Assigned to" or "Assigned to team"; ByLead "by".
	Lead, ByLead   string
	AtISO, AtTitle string
}

// ClaimFormName is the answer post's field naming the claimant the
// operator answers over, once told (answer.Post.Over): the hidden field
// the refused form carries back.
const ClaimFormName = "over-claim"

// claimProblem is the refusal code of an answer to a question another
// operator is on, sent without confirming.
const claimProblem = "claimed"

// claimOf is vd's claim as card c shows it to opts.Operator, nil when
// nobody is on it.
func claimOf(vd inbox.Verdict, opts Options) *ClaimView {
	c := vd.Claim
	if c == nil {
		return nil
	}
	v := &ClaimView{Who: c.By, Mine: opts.Operator != "" && c.By == opts.Operator, Lead: words.card["claim-lead"],
		SinceISO: c.At.UTC().Format(time.RFC3339), SinceText: claimAge(opts.Now.Sub(c.At)), SinceTitle: "since " + exactTime(c.At)}
	if v.Mine {
		v.Lead = words.card["claim-mine"]
	}
	return v
}

// claimControl is the card's claim button for opts, nil when the Viewer
// may not claim it (a viewer's role, a question not open to an answer).
func claimControl(id string, vd inbox.Verdict, claim *ClaimView, opts Options) *ClaimControl {
	if !vd.Claimable || opts.Operator == "" {
		return nil
	}
	ctl := &ClaimControl{Action: root(opts.BasePath) + "/cards/" + url.PathEscape(id) + "/claim", Label: words.card["claim"]}
	switch {
	case claim != nil && claim.Mine:
		ctl.Release, ctl.Label = true, words.card["claim-release"]
	case claim != nil:
		// Beside "ann is on it", "I’m on it" would not say that pressing
		// it makes the question this operator's instead.
		ctl.Label = words.card["claim-take-over"]
	}
	ctl.Assign = assignControl(id, vd, opts)
	return ctl
}

// assignControl is the card's "Assign to" form for opts: the operators
// (opts.Assignees) and, in a group of their own, the teams
// (opts.AssignTeams); nil when there is neither.
func assignControl(id string, vd inbox.Verdict, opts Options) *AssignControl {
	if len(opts.Assignees) == 0 && len(opts.AssignTeams) == 0 {
		return nil
	}
	ctl := &AssignControl{Action: root(opts.BasePath) + "/cards/" + url.PathEscape(id) + "/assign", ID: id + "-assign",
		Label: words.card["assign-label"], Button: words.card["assign"], None: words.card["assign-none"], To: opts.Assignees,
		People: words.card["assign-people"], TeamsLabel: words.card["assign-teams"]}
	for _, t := range opts.AssignTeams {
		ctl.Teams = append(ctl.Teams, AssignOption{Value: AssignTeamValue(t), Text: fmt.Sprintf(words.card["assign-team"], t)})
	}
	if a := vd.Assigned; a != nil {
		ctl.Current = a.To
		if a.Team {
			ctl.Current = AssignTeamValue(a.To)
		}
	}
	return ctl
}

// assignedOf is vd's assignment as the card shows it, nil when none.
func assignedOf(vd inbox.Verdict, opts Options) *AssignedView {
	a := vd.Assigned
	if a == nil {
		return nil
	}
	v := &AssignedView{To: a.To, Team: a.Team, By: a.By, Lead: words.card["assigned"], ByLead: words.card["assigned-by"],
		AtISO: a.At.UTC().Format(time.RFC3339), AtTitle: exactTime(a.At)}
	if a.Team {
		v.Lead = words.card["assigned-team"]
	} else {
		v.Mine = opts.Operator != "" && a.To == opts.Operator
	}
	return v
}

// overClaim is the claimant a refused post is to confirm answering over
// (its problems say so), "" when none.
func overClaim(vd inbox.Verdict, probs []aep.Problem) string {
	if vd.Claim == nil {
		return ""
	}
	for _, p := range probs {
		if p.Code == claimProblem {
			return vd.Claim.By
		}
	}
	return ""
}

// ClaimRefusal words the refusal of an answer to a question claim's
// operator is on, sent without confirming: it names them, and what to
// do to answer anyway.
func ClaimRefusal(claim *inbox.Claim) Refusal {
	if claim == nil {
		return Refusal{Code: claimProblem, Message: words.card["claim-confirm-gone"]}
	}
	return Refusal{Code: claimProblem, Message: claim.By + " " + words.card["claim-lead"] + ". " + words.card["claim-confirm"]}
}

// claimAge is a claim's age in short: "just now", "2 min", "3 h".
func claimAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	default:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
}

// ClaimFilterLink is one of the inbox's claim filters: its words, the
// page under it, and whether it is the one in force.
type ClaimFilterLink struct {
	Text, URL string
	Current   bool
}

// claimFilters are the links to every question, the operator's own and
// the unclaimed ones, on the page at home under filter's other terms.
func claimFilters(home string, filter inbox.Query) []ClaimFilterLink {
	var out []ClaimFilterLink
	for _, c := range []struct{ claim, key string }{{"", "filter-all"}, {inbox.ClaimMine, "filter-mine"}, {inbox.ClaimNone, "filter-unclaimed"}} {
		f := filter
		f.Claim = c.claim
		_, q := filterTerms(f)
		u := home
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		out = append(out, ClaimFilterLink{Text: words.card[c.key], URL: u, Current: filter.Claim == c.claim})
	}
	return out
}
