package routes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// File is a routes file kept read: the last good table, reloaded when
// the file changes. A change that does not read is refused, logged and
// shown (Problem); the last good table stays in force.
type File struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	table   *Table
	stamp   stamp
	problem error
	changed chan struct{} // closed and replaced on every reload
}

// stamp is what tells a changed file: its size and modification time.
type stamp struct {
	size int64
	mod  time.Time
}

// Load reads the routes file at path; a file that does not read is an
// error naming the problem (serve stops on it).
func Load(path string, log *slog.Logger) (*File, error) {
	f := &File{path: path, log: log, changed: make(chan struct{})}
	t, st, err := f.read()
	if err != nil {
		return nil, err
	}
	f.table, f.stamp = t, st
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

func (f *File) read() (*Table, stamp, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("routes file: %w", err)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("routes file: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("%s: %w", f.path, err)
	}
	return t, stamp{size: fi.Size(), mod: fi.ModTime()}, nil
}

// Table is the routes in force: the last good file's.
func (f *File) Table() *Table {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.table
}

// Problem is why the file as it now is was refused (nil when the table
// in force is the file's).
func (f *File) Problem() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.problem
}

// Changed is closed at the next reload, good or refused.
func (f *File) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Reload reads the file again when its size or time changed (force:
// whatever they are) and reports whether it did.
func (f *File) Reload(force bool) bool {
	fi, err := os.Stat(f.path)
	f.mu.Lock()
	same := err == nil && f.problem == nil && fi.Size() == f.stamp.size && fi.ModTime().Equal(f.stamp.mod)
	f.mu.Unlock()
	if same && !force {
		return false
	}
	t, st, err := f.read()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if f.problem == nil || f.problem.Error() != err.Error() {
			f.log.Error("routes: the changed routes file is refused; the last good one stays in force", "err", err)
		} else if !force {
			return false
		}
		f.problem = err
	} else {
		f.table, f.stamp, f.problem = t, st, nil
		f.log.Info("routes: routes file reloaded", "path", f.path, "teams", len(t.names), "routes", len(t.routes))
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return true
}

// Watch looks at the file every interval until ctx ends, reloading it
// when it changed.
func (f *File) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.Reload(false)
		}
	}
}
