package pdf

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/shell"
)

//go:embed pdf_read.md
var readDescription string

// Read is pdf_read: the text of a workspace PDF, page by page, read by a
// child started in Sandbox.
type Read struct{ Sandbox *shell.Sandbox }

// Def declares pdf_read.
// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Read) ReadOnly() bool { return true }

// Tool is pdf_read, for the registry: its extractor runs in sb.
func Tool(sb *shell.Sandbox) tools.Tool { return tools.NewFunc[readArgs](Read{Sandbox: sb}) }

func (Read) Def() tools.Def {
	return tools.Def{Name: "pdf_read", Description: readDescription, Default: true}
}

// CacheDir is where pdf_read keeps the compiled extractor: under the
// home's data folder.
func CacheDir(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, "data", "cache", "pdfium")
}

type readArgs struct {
	Path  string `json:"path" jsonschema:"The PDF, relative to the workspace."`
	Pages string `json:"pages,omitempty" jsonschema:"Pages to read: 3, 2-5 or 1,4-6 (from 1). Default: the first 50."`
}

// Run reads the file and extracts the pages asked for.
func (r Read) Run(ctx context.Context, env tools.Env, a readArgs) (tools.Result, error) {
	if a.Path == "" {
		return tools.Failf("path is required"), nil
	}
	pages, err := ParsePages(a.Pages)
	if err != nil {
		return tools.Failf("pages %q: %v", a.Pages, err), nil
	}
	data, res, err := tools.ReadFile(env, a.Path, MaxBytes)
	if res != nil || err != nil {
		if res != nil {
			return *res, nil
		}
		return tools.Result{}, err
	}
	doc, err := Text(ctx, data, Options{Pages: pages, CacheDir: CacheDir(env.HomeDir), Home: env.HomeDir, Sandbox: r.Sandbox})
	switch {
	case errors.Is(err, ErrNotPDF):
		return tools.Failf("%s is not a PDF that can be read (%v)", a.Path, err), nil
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		return tools.Failf("%s: %v", a.Path, err), nil
	}
	return tools.Result{Output: Format(a.Path, doc)}, nil
}

// Format is how pdf_read shows doc: the pages, fenced, then which were
// read.
func Format(source string, doc *Doc) string {
	var b strings.Builder
	for _, p := range doc.Pages {
		fmt.Fprintf(&b, "--- page %d of %d ---\n%s\n", p.Number, doc.Total, strings.TrimRight(p.Text, "\n"))
	}
	out := fence.Wrap("pdf:"+source, b.String())
	switch {
	case doc.Total == 0:
		return out + "\n[the PDF has no pages]"
	case len(doc.Pages) == 0:
		return out
	}
	last := doc.Pages[len(doc.Pages)-1].Number
	out += fmt.Sprintf("\n[read %d page(s) of %d", len(doc.Pages), doc.Total)
	if last < doc.Total {
		out += fmt.Sprintf("; pages %d-%d not read yet: call again with pages \"%d-%d\"", last+1, doc.Total, last+1, min(doc.Total, last+MaxPages))
	}
	return out + "]"
}

// ParsePages reads "3", "2-5" or "1,4-6"; "" is nil (the default range).
// Pages keep the order written, without repeats.
func ParsePages(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	seen := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		from, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || from < 1 {
			return nil, fmt.Errorf("%q is not a page number (pages count from 1)", part)
		}
		to := from
		if isRange {
			if to, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || to < from {
				return nil, fmt.Errorf("%q is not a range like 2-5", part)
			}
		}
		for n := from; n <= to; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
			if len(out) > MaxPages {
				return nil, fmt.Errorf("more than %d pages; ask for at most %d per call", MaxPages, MaxPages)
			}
		}
	}
	return out, nil
}
