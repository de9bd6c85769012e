package ui

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Static holds app.css, app.js and favicon.svg, rooted so that a server can
// mount it under /static/:
//
//	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(ui.Static())))
func Static() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // "static" is a valid constant path; fs.Sub cannot fail on it
	}
	return sub
}
