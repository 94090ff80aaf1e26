package app

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aepforms/aepforms/web"
)

// operatorsWatch reads the operators file again when its size or time
// changed, every `every`, and makes the operators it names the ones
// signing in (web.OperatorList): an operator added signs in without a
// restart, and a changed secret or role ends the sessions of the old one
// at their next check. A file refused (unreadable, readable by others,
// malformed, naming no one) is logged, once for each problem, and the
// last good list stays in force. An operator whose line went, or whose
// secret or role changed, loses their devices' notification
// subscriptions with their sessions, as a sign-out does: a device must
// not go on receiving the questions of someone signed out for good.
type operatorsWatch struct {
	path    string
	every   time.Duration
	list    *web.OperatorList
	devices web.PushDevices
	log     *slog.Logger
	// size and mod are the file's when last read; problem is the last
	// refusal's, "" after a good read.
	size    int64
	mod     time.Time
	problem string
}

func newOperatorsWatch(path string, every time.Duration, list *web.OperatorList, devices web.PushDevices, log *slog.Logger) *operatorsWatch {
	w := &operatorsWatch{path: path, every: every, list: list, devices: devices, log: log}
	if fi, err := os.Stat(path); err == nil {
		w.size, w.mod = fi.Size(), fi.ModTime()
	}
	return w
}

// reload reads the file when it changed since last read.
func (w *operatorsWatch) reload(ctx context.Context) {
	fi, err := os.Stat(w.path)
	if err == nil && fi.Size() == w.size && fi.ModTime().Equal(w.mod) {
		return
	}
	if err == nil {
		w.size, w.mod = fi.Size(), fi.ModTime()
	}
	ops, err := loadOperators(w.path)
	if err != nil {
		if err.Error() != w.problem {
			w.log.Error("the changed operators file is refused; the operators read before stay in force", "err", err)
			w.problem = err.Error()
		}
		return
	}
	w.problem = ""
	gone := changedOperators(w.list.Get(), ops)
	w.list.Set(ops)
	w.log.Info("operators file read again", "path", w.path, "operators", len(ops))
	w.forgetDevices(ctx, gone)
}

// changedOperators are the names of before whose line is gone from
// after, or names another secret or role.
func changedOperators(before, after []web.Operator) map[string]bool {
	now := make(map[string]web.Operator, len(after))
	for _, o := range after {
		now[o.Name] = o
	}
	gone := map[string]bool{}
	for _, o := range before {
		if n, ok := now[o.Name]; !ok || n.Hash != o.Hash || n.Role != o.Role {
			gone[o.Name] = true
		}
	}
	return gone
}

// forgetDevices removes the notification subscriptions of the operators
// in gone.
func (w *operatorsWatch) forgetDevices(ctx context.Context, gone map[string]bool) {
	if len(gone) == 0 || w.devices == nil {
		return
	}
	subs, err := w.devices.PushSubscriptions(ctx)
	if err != nil {
		w.log.Error("the devices of operators whose line changed could not be read; they are still notified", "err", err)
		return
	}
	for _, s := range subs {
		if !gone[s.Operator] {
			continue
		}
		if _, err := w.devices.DeletePushSubscription(ctx, s.Operator, s.Endpoint); err != nil {
			w.log.Error("a device of an operator whose line changed could not be removed; it is still notified", "operator", s.Operator, "err", err)
		}
	}
}
