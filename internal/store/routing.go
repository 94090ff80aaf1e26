package store

import "time"

// RoutingStep is one line of a question's routing history
// (internal/routing): the team a routes file sent it to (Kind RoutedTo),
// a reminder or an escalation sent to Team (inbox.StepReminded,
// inbox.StepEscalated), or an assignment told to its assignee (Assigned),
// and when. A backend keeps them as long as the
// card's answers (Pruner), so History shows them as long as the answer;
// keeping one is also the claim of its step: of the replicas sharing a
// database, the one whose keep lands first takes it.
type RoutingStep struct {
	Card string
	Kind string
	Team string
	At   time.Time
}

// RoutedTo is the RoutingStep kind that names the question's team.
const RoutedTo = "team"
