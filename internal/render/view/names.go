package view

import "github.com/aepforms/aepforms/internal/render/form"

// NameRunes is how much of a name an agent chose a page shows: the
// agent's, session's and run's names, the source, the request id and the
// sender of another answer, each up to 120 characters, a longer one cut
// with "…". Names are the agents' to choose: without the cut, 42 cards
// with 1 MiB agent names made a 113 MB page.
const NameRunes = 120

// Name is s as a page shows it: whole up to NameRunes characters, else
// its first NameRunes-1 and "…". The result never shares s's memory when
// cut, so a cut name does not keep a long one alive.
func Name(s string) string { return form.Cut(s, NameRunes) }
