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
// last good list stays in force.
type operatorsWatch struct {
	path  string
	every time.Duration
	list  *web.OperatorList
	log   *slog.Logger
	// size and mod are the file's when last read; problem is the last
	// refusal's, "" after a good read.
	size    int64
	mod     time.Time
	problem string
}

func newOperatorsWatch(path string, every time.Duration, list *web.OperatorList, log *slog.Logger) *operatorsWatch {
	w := &operatorsWatch{path: path, every: every, list: list, log: log}
	if fi, err := os.Stat(path); err == nil {
		w.size, w.mod = fi.Size(), fi.ModTime()
	}
	return w
}

// run looks at the file every w.every until ctx ends.
func (w *operatorsWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.reload()
		}
	}
}

// reload reads the file when it changed since last read.
func (w *operatorsWatch) reload() {
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
	w.list.Set(ops)
	w.log.Info("operators file read again", "path", w.path, "operators", len(ops))
}
