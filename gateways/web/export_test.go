package web

// SetMarkdown replaces the Markdown renderer of p, so that a test can make
// rendering slow.
func SetMarkdown(p *Pages, f func(string) string) { p.markdown = f }
