// Package routes reads the routes file: which team each question goes
// to, and each team's chat channel and escalation policy. The first
// route that matches a question names its team. It uses the standard
// library only.
package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// ErrInvalid marks a routes file that cannot be used; the error's text
// names the problem and where it is.
var ErrInvalid = errors.New("routes: invalid routes file")

// Team is one team of a routes file: who is notified of its questions,
// and when they are reminded and escalated.
type Team struct {
	Name string
	// Webhook is the team's chat channel: a Slack- or Mattermost-style
	// incoming webhook URL ("" when none). It holds a secret: never log
	// more than its origin.
	Webhook string
	// Remind is how long a question of the team waits unanswered and
	// unclaimed before the team is notified again; 0 never.
	Remind time.Duration
	// Escalate is how long it waits before EscalateTo is notified as
	// well; 0 never.
	Escalate   time.Duration
	EscalateTo string
}

// Route sends the questions it matches to Team. An empty criterion
// matches anything; the others must all match.
type Route struct {
	// Agent is a glob (path.Match) on the request's agent attribute.
	Agent string
	// Kind is the request's kind (permission, input, form, ...).
	Kind string
	// SessionLabel is a glob on the request's session (its id, as the
	// card shows it).
	SessionLabel string
	// Tool is the tool the request asks about, when the inbox knows it.
	Tool string
	Team string
}

// Question is what a route is matched against.
type Question struct {
	Agent, Kind, Session, Tool string
}

// Table is a routes file read and checked.
type Table struct {
	teams  map[string]Team
	names  []string // the teams' names, sorted
	routes []Route
}

// Match is the team of the first route q matches, and the route's index
// (from 0); false when none does.
func (t *Table) Match(q Question) (string, int, bool) {
	if t == nil {
		return "", 0, false
	}
	for i, r := range t.routes {
		if r.matches(q) {
			return r.Team, i, true
		}
	}
	return "", 0, false
}

func (r Route) matches(q Question) bool {
	glob := func(pattern, s string) bool {
		ok, _ := path.Match(pattern, s) // patterns are checked when read
		return pattern == "" || ok
	}
	return glob(r.Agent, q.Agent) && (r.Kind == "" || r.Kind == q.Kind) &&
		glob(r.SessionLabel, q.Session) && (r.Tool == "" || r.Tool == q.Tool)
}

// Team is the team named name.
func (t *Table) Team(name string) (Team, bool) {
	if t == nil {
		return Team{}, false
	}
	tm, ok := t.teams[name]
	return tm, ok
}

// Teams are the file's teams, by name.
func (t *Table) Teams() []Team {
	if t == nil {
		return nil
	}
	out := make([]Team, 0, len(t.names))
	for _, n := range t.names {
		out = append(out, t.teams[n])
	}
	return out
}

// TeamNames are the teams' names, sorted.
func (t *Table) TeamNames() []string {
	if t == nil {
		return nil
	}
	return slices.Clone(t.names)
}

// Routes are the file's routes, in order.
func (t *Table) Routes() []Route {
	if t == nil {
		return nil
	}
	return slices.Clone(t.routes)
}

// fileJSON is the routes file as written.
type fileJSON struct {
	Teams  map[string]teamJSON `json:"teams"`
	Routes []routeJSON         `json:"routes"`
}

type teamJSON struct {
	Webhook    string `json:"webhook"`
	Remind     string `json:"remind"`
	Escalate   string `json:"escalate"`
	EscalateTo string `json:"escalate_to"`
}

type routeJSON struct {
	Agent        string `json:"agent"`
	Kind         string `json:"kind"`
	SessionLabel string `json:"session_label"`
	Tool         string `json:"tool"`
	Team         string `json:"team"`
}

// maxTeamName bounds a team's name, in bytes.
const maxTeamName = 64

// ValidTeamName reports whether s can name a team: 1 to 64 letters,
// digits, '-', '_' or '.'.
func ValidTeamName(s string) bool {
	if s == "" || len(s) > maxTeamName {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// Parse reads a routes file. Every problem it finds is refused with
// ErrInvalid and words naming the problem: an unknown key, a team a
// route or escalate_to names that the file does not define, a duration
// or glob that does not read, a webhook that is not an http(s) URL, no
// route at all.
func Parse(b []byte) (*Table, error) {
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, jsonProblem(b, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrInvalid)
	}
	t := &Table{teams: make(map[string]Team, len(f.Teams))}
	for name, tj := range f.Teams {
		tm, err := readTeam(name, tj)
		if err != nil {
			return nil, fmt.Errorf("%w: team %q: %s", ErrInvalid, name, err)
		}
		t.teams[name] = tm
		t.names = append(t.names, name)
	}
	slices.Sort(t.names)
	for _, name := range t.names {
		if to := t.teams[name].EscalateTo; to != "" {
			if _, ok := t.teams[to]; !ok {
				return nil, fmt.Errorf("%w: team %q: escalate_to %q is no team of this file (its teams: %s)", ErrInvalid, name, to, strings.Join(t.names, ", "))
			}
		}
	}
	if len(f.Routes) == 0 {
		return nil, fmt.Errorf("%w: no routes: add at least one, e.g. {\"team\": %q} to send every question there", ErrInvalid, firstOr(t.names, "oncall"))
	}
	for i, rj := range f.Routes {
		r, err := readRoute(rj, t)
		if err != nil {
			return nil, fmt.Errorf("%w: route %d: %s", ErrInvalid, i+1, err)
		}
		t.routes = append(t.routes, r)
	}
	return t, nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// readTeam checks one team.
func readTeam(name string, tj teamJSON) (Team, error) {
	tm := Team{Name: name, Webhook: tj.Webhook, EscalateTo: tj.EscalateTo}
	if !ValidTeamName(name) {
		return tm, errors.New("a team's name is 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if tj.Webhook != "" {
		u, err := url.Parse(tj.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return tm, errors.New("webhook is not an http: or https: URL")
		}
	}
	var err error
	if tm.Remind, err = duration("remind", tj.Remind); err != nil {
		return tm, err
	}
	if tm.Escalate, err = duration("escalate", tj.Escalate); err != nil {
		return tm, err
	}
	switch {
	case tm.Escalate > 0 && tm.EscalateTo == "":
		return tm, errors.New("escalate is set but escalate_to names no team")
	case tm.EscalateTo != "" && tm.Escalate == 0:
		return tm, errors.New("escalate_to is set but escalate gives no time (e.g. \"15m\")")
	case tm.EscalateTo == name:
		return tm, errors.New("escalate_to is the team itself")
	}
	return tm, nil
}

// duration reads a Go duration ("90s", "5m", "1h30m"); "" is 0.
func duration(key, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q is not a positive duration (e.g. \"5m\", \"90s\", \"1h\")", key, s)
	}
	return d, nil
}

// readRoute checks one route against the teams.
func readRoute(rj routeJSON, t *Table) (Route, error) {
	r := Route{Agent: rj.Agent, Kind: rj.Kind, SessionLabel: rj.SessionLabel, Tool: rj.Tool, Team: rj.Team}
	if r.Team == "" {
		return r, errors.New("names no team (\"team\": NAME)")
	}
	if _, ok := t.teams[r.Team]; !ok {
		return r, fmt.Errorf("team %q is not among the file's teams (%s)", r.Team, strings.Join(t.names, ", "))
	}
	for key, g := range map[string]string{"agent": r.Agent, "session_label": r.SessionLabel} {
		if _, err := path.Match(g, ""); err != nil {
			return r, fmt.Errorf("%s %q is not a glob (* ? [a-z])", key, g)
		}
	}
	return r, nil
}

// jsonProblem words a decoding error with its line.
func jsonProblem(b []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("line %d: not JSON: %s", lineOf(b, syn.Offset), syn.Error())
	case errors.As(err, &typ):
		return fmt.Sprintf("line %d: %s should be %s", lineOf(b, typ.Offset), typ.Field, typ.Type)
	case errors.Is(err, io.EOF):
		return "the file is empty: want {\"teams\": {...}, \"routes\": [...]}"
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown key " + k + ": a team has webhook, remind, escalate, escalate_to; a route has agent, kind, session_label, tool, team"
	}
	return err.Error()
}

func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}
