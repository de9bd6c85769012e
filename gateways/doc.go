// Package gateways holds the inbound adapters of the server: the web HTTP
// API and SSE (gateways/web), and later Telegram and the scheduler. Each maps
// its protocol onto events and projections; none holds state of its own.
package gateways
