package web

import (
	"net/url"
	"strings"
	"testing"
)

// Mermaid is loaded from a listed CDN, pinned to one version by its
// integrity hash, and the diagram's source is text, never markup.
func TestCanvasMermaidPinnedWithIntegrity(t *testing.T) {
	page := mermaidPage(MermaidURL, MermaidIntegrity, `graph TD; A-->B </pre><script>alert(1)</script>`)
	if !strings.Contains(page, `src="`+MermaidURL+`" integrity="`+MermaidIntegrity+`" crossorigin="anonymous"`) {
		t.Errorf("mermaid not pinned:\n%s", page)
	}
	if !strings.HasPrefix(MermaidIntegrity, "sha384-") || len(MermaidIntegrity) != len("sha384-")+64 || !strings.Contains(MermaidURL, "@12.3.0/") {
		t.Errorf("pin: %s %s", MermaidURL, MermaidIntegrity)
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Errorf("the diagram's source became markup:\n%s", page)
	}
	u, _ := url.Parse(MermaidURL)
	csp := renderCSP(DefaultCDNs)
	if !strings.Contains(csp, "script-src 'unsafe-inline' "+strings.Join(DefaultCDNs, " ")) || !strings.Contains(csp, u.Scheme+"://"+u.Host) ||
		strings.Count(csp, "'self'") != 1 || !strings.Contains(csp, "frame-ancestors 'self'") || strings.Contains(csp, "allow-same-origin") {
		t.Errorf("render CSP: %s", csp)
	}
}
