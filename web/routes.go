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
	// An address the UI does not serve (a mistyped or stale link) is a
	// page in the UI's style with the way to the inbox, not bare text.
	r.NotFound(s.pages.notFound)

	in, pg := s.deps.Inbox, s.pages
	// gz compresses pages, fragments and assets for a browser that
	// accepts it. Not the push stream: each event must reach the browser
	// when written, and not the exports, which stream as they are read.
	gz := middleware.Compress(5, "text/html", "text/css", "text/javascript", "application/javascript", "image/svg+xml")
	r.Get("/healthz", handleHealthz())
	r.Get("/readyz", handleReadyz(s.deps.Upstream, s.deps.Database, s.cfg.ReadyTimeout, s.cfg.Logger))
	r.With(gz).Handle("/static/*", handleStatic())
	r.Get("/sw.js", handleServiceWorker())
	r.Get("/manifest.webmanifest", handleManifest(s.cfg.BasePath))

	r.Group(func(r chi.Router) {
		r.Use(s.crossOrigin)
		r.Get("/signin", handleSignInPage(s.auth, pg))
		r.Post("/signin", handleSignIn(s.auth, s.guard, pg))
		r.Post("/signout", handleSignOut(s.auth, pg, s.deps.PushDevices, s.live, in))
		if s.auth.oidc != nil {
			r.Get("/auth/login", handleOIDCStart(s.auth, pg))
			r.Get("/auth/callback", handleOIDCCallback(s.auth, pg))
			if s.auth.embed {
				// The panel's frame signs in through a window (handoff.go).
				r.Post("/auth/handoff", handleHandoffStart(s.auth))
				r.Get("/auth/popup", handleSignInPopup(s.auth, pg))
				r.Post("/auth/popup", handlePopupStart(s.auth, pg))
				r.Post("/auth/handoff/redeem", handleHandoffRedeem(s.auth))
			}
		}
	})

	r.Group(func(r chi.Router) {
		r.Use(s.crossOrigin, s.requireOperator)
		r.With(gz).Get("/", handlePage(pg, false))
		r.With(gz).Get("/panel", handlePage(pg, true))
		r.Post("/signout/others", handleSignOutOthers(s.auth, pg, s.live))
		r.With(gz).Get("/cards/{id}", handleCard(in, pg))
		r.With(gz).Get("/cards/{id}/page", handleCardPage(in, pg))
		r.With(gz).Get("/cards/{id}/row", handleRow(in, pg))
		r.With(gz).Get("/cards/{id}/prompt", handlePrompt(in, pg))
		// The role is checked before anything is read or sent: a viewer's
		// hand-made post gets 403 and sends nothing.
		answers := requireRole(Role.answers, "answer questions")
		rules := requireRole(Role.administers, "make, resume, widen or delete rules")
		r.With(answers).Post("/cards/{id}/answer", handleAnswer(s.answers, pg, s.metrics))
		r.With(answers).Post("/cards/{id}/again", handleSendAgain(s.answers, pg))
		r.With(answers).Post("/undo", handleUndo(s.answers, pg))
		r.With(answers).Post("/cards/{id}/notification-answer", handleNotificationAnswer(s.deps.Notifier, s.answers, pg, s.metrics))
		r.Get("/cards/{id}/answer", handleAnswerReload(pg))
		r.With(answers).Post("/cards/{id}/claim", handleClaim(in, pg, s.metrics))
		r.With(answers).Post("/cards/{id}/assign", handleAssign(in, pg, assignable{people: s.auth.assignees, teams: pg.routes.teams}))
		r.With(answers).Post("/cards/{id}/carry", handleCarry(pg))
		r.Get("/cards/{id}/claim", handleAnswerReload(pg))
		r.Get("/cards/{id}/assign", handleAnswerReload(pg))
		r.Get("/cards/{id}/carry", handleAnswerReload(pg))
		r.With(gz).Get("/batches", handleBatches(in, pg.batch))
		r.With(answers).Post("/batch/answer", handleBatchAnswer(s.answers, pg.batch, s.metrics))
		r.Get("/batch/answer", handleBatchReload(pg.batch))
		r.Get("/push", handlePush(in, pg, s.metrics, s.push, s.deps.Streams, s.live))
		r.Get("/metrics", handleMetrics(in, s.deps.Upstream, s.metrics, s.deps.Notifier, s.deps.Rules, s.deps.RoutingMetrics))
		r.With(gz).Get("/history", handleHistory(s.deps.History, pg.rules))
		r.With(gz).Get("/rules", handleRules(pg.rules))
		r.With(gz, requireRole(Role.administers, "view the routes")).Get("/routes", handleRoutes(pg.routes))
		r.With(answers).Post("/rules/{id}/pause", handleRuleChange(pg.rules, "pause"))
		r.With(rules).Post("/rules/{id}/resume", handleRuleChange(pg.rules, "resume"))
		r.With(rules).Post("/rules/{id}/delete", handleRuleChange(pg.rules, "delete"))
		r.Get("/history.jsonl", handleHistoryExport(s.deps.History, pg.rules, exportJSONL, s.cfg.ResponseTimeout))
		r.Get("/history.csv", handleHistoryExport(s.deps.History, pg.rules, exportCSV, s.cfg.ResponseTimeout))
		r.Get("/subscriptions", handlePushConfig(s.deps.Notifier, s.deps.PushDevices, s.deps.PushOff, s.cfg.Viewer))
		r.Post("/subscriptions", handleSubscribe(s.deps.Notifier, s.deps.PushDevices, s.cfg.Viewer, s.cfg.Now, s.cfg.MaxPushDevices, s.cfg.Logger))
		r.Delete("/subscriptions", handleUnsubscribe(s.deps.PushDevices))
		r.Post("/visibility", handleVisibility(s.deps.PushDevices, s.cfg.Now))
	})
	return r
}
