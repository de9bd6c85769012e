// Package gateways holds the inbound adapters of the server: the web UI,
// HTTP API and SSE (gateways/web), Telegram (gateways/telegram), the
// scheduler (gateways/scheduler) and the one door they all use to store an
// owner's message (gateways/inbound). Each maps its protocol onto events and
// projections. What state they keep is folded from the log: the scheduler's
// jobs and Telegram's polling offset are events on their own scopes.
// A gateway imports another only as docs/architecture.md allows:
// gateways/inbound and gateways/scheduler.
package gateways
