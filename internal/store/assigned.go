package store

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Assigned is the RoutingStep kind of an assignment told to its assignee
// (internal/routing), one per assignment: its Team is AssignedTeam's
// words of who assigned the question to whom, which History reads.
const Assigned = "assigned"

// AssignedTeam is an Assigned step's Team of assignment a:
// {rev}:{person|team}:{to}:{by}, the names query-escaped (a name may
// hold a colon).
func AssignedTeam(a inbox.Assignment) string {
	kind := "person"
	if a.Team {
		kind = "team"
	}
	return strconv.FormatInt(a.Rev, 10) + ":" + kind + ":" + url.QueryEscape(a.To) + ":" + url.QueryEscape(a.By)
}

// ParseAssigned reads an AssignedTeam back (its To, Team, By and Rev; At
// is the step's); false when team is none.
func ParseAssigned(team string) (inbox.Assignment, bool) {
	parts := strings.Split(team, ":")
	if len(parts) != 4 || (parts[1] != "person" && parts[1] != "team") {
		return inbox.Assignment{}, false
	}
	rev, err := strconv.ParseInt(parts[0], 10, 64)
	to, err2 := url.QueryUnescape(parts[2])
	by, err3 := url.QueryUnescape(parts[3])
	if err != nil || err2 != nil || err3 != nil || to == "" {
		return inbox.Assignment{}, false
	}
	return inbox.Assignment{To: to, Team: parts[1] == "team", By: by, Rev: rev}, true
}
