// Package samples holds the sample AEP requests the tests share, so each
// test does not keep its own copy: the golden corpus's deploy form and a
// form with a field of every kind, and attention.requested events asking
// them. Every call returns a fresh value the caller may change (a prompt,
// a deadline) without touching anyone else's.
//
// It imports internal/aep only, so the tests of every package but aep's
// own may use it. It holds no inbox cards: internal/inbox's own tests could
// not import a package that imports inbox.
package samples
