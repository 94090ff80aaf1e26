package web

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// People is the journal's record of the people the identity provider
// signed in (store.Person): kept at each sign-in and recheck there, so
// team routing, the assign list and the Operators and routes page know
// them between their sign-ins.
type People interface {
	// SeePerson keeps p as what their last sign-in or recheck said;
	// store.ErrNameTaken when the name is another account's (subject).
	SeePerson(ctx context.Context, p store.Person) error
	// People lists those seen at since or later, by name.
	People(ctx context.Context, since time.Time) ([]store.Person, error)
	// ForgetPeople forgets those last seen before before.
	ForgetPeople(ctx context.Context, before time.Time) (int, error)
}

// PeopleList is the people the identity provider signed in, as this
// process last read them from the journal (Refresh; serve does it every
// --session-recheck, so a sign-in on another replica is known within
// it) and as its own sign-ins and rechecks saw them since. A person
// unseen for Forget is forgotten.
type PeopleList struct {
	store  People
	forget time.Duration
	now    func() time.Time
	mu     sync.Mutex // orders the writes of p
	p      atomic.Pointer[[]store.Person]
}

// DefaultForgetPeople is how long a person the identity provider signed
// in stays listed unseen: 30 days.
const DefaultForgetPeople = 30 * 24 * time.Hour

// NewPeopleList is the people kept in st (nil: in this process's memory
// only), forgotten once unseen for forget (DefaultForgetPeople when not
// positive), on the clock now (time.Now when nil).
func NewPeopleList(st People, forget time.Duration, now func() time.Time) *PeopleList {
	if st == nil {
		st = &memoryPeople{m: map[string]store.Person{}}
	}
	if forget <= 0 {
		forget = DefaultForgetPeople
	}
	if now == nil {
		now = time.Now
	}
	l := &PeopleList{store: st, forget: forget, now: now}
	l.p.Store(&[]store.Person{})
	return l
}

// Get is the people listed now, by name.
func (l *PeopleList) Get() []store.Person {
	if l == nil {
		return nil
	}
	cutoff := l.now().Add(-l.forget)
	var out []store.Person
	for _, p := range *l.p.Load() {
		if !p.LastSeen.Before(cutoff) {
			out = append(out, p)
		}
	}
	return out
}

// Operators is the people listed now as operators (their name, role and
// teams; no secret): what team routing reads beside the operators
// file's.
func (l *PeopleList) Operators() []Operator {
	var out []Operator
	for _, p := range l.Get() {
		role, ok := ParseRole(p.Role)
		if !ok || role == "" {
			role = RoleViewer // never more than the record says
		}
		out = append(out, Operator{Name: p.Name, Role: role, Teams: p.Teams})
	}
	return out
}

// Holds reports whether a person named name is listed; one not listed
// here is looked for in the journal once more (a sign-in on another
// replica since the last Refresh), for at most timeout.
func (l *PeopleList) Holds(name string, timeout time.Duration) bool {
	if l == nil {
		return false
	}
	listed := func() bool {
		return slices.ContainsFunc(l.Get(), func(p store.Person) bool { return p.Name == name })
	}
	if listed() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.Refresh(ctx) == nil && listed()
}

// Refresh forgets those unseen for too long and reads the rest from the
// journal.
func (l *PeopleList) Refresh(ctx context.Context) error {
	cutoff := l.now().Add(-l.forget)
	if _, err := l.store.ForgetPeople(ctx, cutoff); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	people, err := l.store.People(ctx, cutoff)
	if err != nil {
		return err
	}
	l.p.Store(&people)
	return nil
}

// see keeps p in the journal and in the list.
func (l *PeopleList) see(ctx context.Context, p store.Person) error {
	if err := l.store.SeePerson(ctx, p); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	people := slices.DeleteFunc(slices.Clone(*l.p.Load()), func(q store.Person) bool { return q.Name == p.Name })
	people = append(people, p)
	slices.SortFunc(people, func(a, b store.Person) int { return strings.Compare(a.Name, b.Name) })
	l.p.Store(&people)
	return nil
}

// memoryPeople is the People of a UI without a journal: known until the
// process ends.
type memoryPeople struct {
	mu sync.Mutex
	m  map[string]store.Person // guarded by mu
}

func (s *memoryPeople) SeePerson(_ context.Context, p store.Person) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	was, ok := s.m[p.Name]
	switch {
	case ok && was.Subject != "" && p.Subject != "" && was.Subject != p.Subject:
		return store.ErrNameTaken
	case ok && p.Subject == "":
		p.Subject = was.Subject
	}
	s.m[p.Name] = p
	return nil
}

func (s *memoryPeople) People(_ context.Context, since time.Time) ([]store.Person, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Person
	for _, p := range s.m {
		if !p.LastSeen.Before(since) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b store.Person) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *memoryPeople) ForgetPeople(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for name, p := range s.m {
		if p.LastSeen.Before(before) {
			delete(s.m, name)
			n++
		}
	}
	return n, nil
}
