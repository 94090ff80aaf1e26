package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the whole HTTP surface of the UI, relative to the base path.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.recoverer, s.securityHeaders, s.hostCheck)

	r.Get("/healthz", handleHealthz())
	r.Get("/readyz", handleReadyz(s.deps.Ready))
	r.Handle("/static/*", handleStatic())

	r.Group(func(r chi.Router) {
		r.Use(s.crossOrigin, s.limitBody)
		r.Get("/signin", handleSignInPage(s))
		r.Post("/signin", handleSignIn(s))
		r.Post("/signout", handleSignOut(s))
	})

	r.Group(func(r chi.Router) {
		r.Use(s.crossOrigin, s.limitBody, s.requireOperator)
		r.Get("/", handlePage(s, false))
		r.Get("/panel", handlePage(s, true))
		r.Get("/cards/{id}", handleCard(s))
		r.Post("/cards/{id}/answer", handleAnswer(s, s.deps.Inbox, s.deps.Submitter))
		r.Get("/push", handlePush(s, s.deps.Inbox))
		r.Get("/metrics", handleMetrics(s.deps.Metrics, s.deps.Inbox, s.deps.Ready))
	})
	return r
}
