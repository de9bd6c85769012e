// Package tools will hold the tool registry and the built-in tools; adapters
// to what a tool wraps live one level down (tools/shell, tools/browser, …).
// Nothing is registered yet: the turn loop that calls tools is the next step.
package tools
