package store

import (
	"context"
	"time"
)

// RuleByPrefix starts the operator name of an answer a rule sent
// (Submission.By): "rule:" and the rule's id (rules.ByPrefix, the same).
const RuleByPrefix = "rule:"

// AnyRule is HistoryQuery.Rule for the answers any rule sent.
const AnyRule = "*"

// RuleAnswersMax is the most RuleAnswers counts: past it the count is
// RuleAnswersMax ("99+" is all a header needs), so however long an
// operator stays away, the count reads at most this many rows.
const RuleAnswersMax = 100

// RuleLooks are when each operator last looked at the answers rules sent
// (the History list of them), kept in the journal so the count follows
// the operator from device to device and replica to replica.
type RuleLooks interface {
	// RuleAnswers counts the answers rules sent after operator last
	// looked (every answer History keeps when they never did), at most
	// RuleAnswersMax.
	RuleAnswers(ctx context.Context, operator string) (int, error)
	// SawRuleAnswers records that operator has seen the answers rules
	// sent up to and including upTo; an earlier time than the one kept
	// changes nothing.
	SawRuleAnswers(ctx context.Context, operator string, upTo time.Time) error
}
