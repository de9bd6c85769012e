// Package ui holds the templ components of the server-rendered web UI. A
// component is a pure function of a plain view struct; no I/O happens here.
package ui
