package web

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/pdf"
	"github.com/my-agent-crew/crew/tools/shell"
)

//go:embed fetch_url.md
var fetchURLDescription string

// Limits of one fetch.
const (
	fetchTimeout  = 30 * time.Second
	MaxFetchBytes = 5 << 20 // the body read; a longer one is cut and said so
	userAgent     = "my-agent-crew fetch_url (+https://github.com/my-agent-crew)"
)

// FetchURL reads one web page through the wall.
type FetchURL struct {
	Client *http.Client // dials through the wall (wall.Client)
	// Sandbox starts the PDF extractor's child (nil: a PDF is not read).
	Sandbox *shell.Sandbox
}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (FetchURL) ReadOnly() bool { return true }

func (FetchURL) Def() tools.Def {
	return tools.Def{Name: "fetch_url", Description: fetchURLDescription + "\n" + fence.Rule, Default: true}
}

type fetchArgs struct {
	URL string `json:"url" jsonschema:"An http:// or https:// URL of a public site."`
}

// parse is a's URL, or the refusal the model reads.
func (f FetchURL) parse(a fetchArgs) (*url.URL, *tools.Result) {
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r := tools.Failf("fetch_url: %q is not an http(s) URL", a.URL)
		return nil, &r
	}
	if u.User != nil {
		r := tools.Failf("fetch_url: a URL with a user name or password is refused")
		return nil, &r
	}
	return u, nil
}

// Check refuses a URL that is not http(s) before anyone is asked.
func (f FetchURL) Check(_ tools.Env, a fetchArgs) error {
	if _, res := f.parse(a); res != nil {
		return errors.New(res.Output)
	}
	return nil
}

func (f FetchURL) Run(ctx context.Context, env tools.Env, a fetchArgs) (tools.Result, error) {
	u, res := f.parse(a)
	if res != nil {
		return *res, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tools.Failf("fetch_url: %v", err), nil
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain,application/json,application/pdf;q=0.9,*/*;q=0.5")
	resp, err := f.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Failf("fetch_url: %s: %v", u, unwrapURLError(err)), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxFetchBytes+1))
	if err != nil && len(body) == 0 {
		return tools.Failf("fetch_url: %s: reading the body: %v", u, err), nil
	}
	cut := len(body) > MaxFetchBytes
	if cut {
		body = body[:MaxFetchBytes]
	}
	final := resp.Request.URL.String()
	ctype := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ctype)
	if mt == "" || mt == "application/octet-stream" {
		mt = http.DetectContentType(body)
		mt, _, _ = mime.ParseMediaType(mt)
	}
	meta := map[string]any{"url": final, "status": resp.StatusCode, "content_type": mt}
	// What the server chose (the address it redirected to, its status
	// line's words, the page's title) is shown outside the fence only as
	// one inert token or inside it (R-SEC-1).
	shown := fence.Link(final)
	var head strings.Builder
	fmt.Fprintf(&head, "URL: %s\nStatus: %d %s\nContent-Type: %s\n", shown, resp.StatusCode, http.StatusText(resp.StatusCode), mt)
	var text, title string
	switch {
	case mt == "application/pdf":
		if cut {
			return tools.Failf("fetch_url: %s: the PDF is larger than %d MiB", shown, MaxFetchBytes>>20), nil
		}
		return f.pdf(ctx, env, final, u, body, meta, &head)
	case mt == "text/html" || mt == "application/xhtml+xml":
		decoded := decode(body, ctype)
		title, text, err = htmlToMarkdown(decoded, final)
		if err != nil {
			return tools.Failf("fetch_url: %s: the HTML could not be read: %v", shown, err), nil
		}
	case strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/javascript":
		text = decode(body, ctype)
	default:
		return tools.Failf("fetch_url: %s is %s (%d bytes), which fetch_url does not read: it reads HTML, text, JSON and PDF", shown, mt, len(body)), nil
	}
	if cut {
		head.WriteString(fmt.Sprintf("(only the first %d MiB of the body were read)\n", MaxFetchBytes>>20))
	}
	if strings.TrimSpace(text) == "" {
		text = "(the page has no text)"
	}
	if title != "" {
		meta["title"] = title
		text = "Title: " + oneLine(title) + "\n\n" + text
	}
	out := head.String() + "\n" + fence.Wrap(shown, text)
	return tools.Result{Output: out, IsError: resp.StatusCode >= 400, Meta: meta}, nil
}

// pdf saves a PDF into downloads/, reports where, and shows its text
// (the first pages, as pdf_read does).
func (f FetchURL) pdf(ctx context.Context, env tools.Env, final string, u *url.URL, body []byte, meta map[string]any, head *strings.Builder) (tools.Result, error) {
	name := path.Base(u.Path)
	if !strings.HasSuffix(strings.ToLower(name), ".pdf") {
		name = SafeName(u.Hostname(), "page") + ".pdf"
	}
	rel, err := SaveDownload(env.Workspace, name, body)
	if err != nil {
		return tools.Failf("fetch_url: %s: the PDF could not be saved: %v", fence.Link(final), err), nil
	}
	meta["saved"] = rel
	fmt.Fprintf(head, "Saved: %s (%d bytes); pdf_read reads more of it\n\n", rel, len(body))
	res := tools.Result{Meta: meta, Parts: []tools.Part{tools.FilePart(rel, "application/pdf")}}
	doc, err := pdf.Text(ctx, body, pdf.Options{CacheDir: pdf.CacheDir(env.HomeDir), Home: env.HomeDir, Sandbox: f.Sandbox})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		res.Output = head.String() + fmt.Sprintf("Its text could not be read: %v", err)
		return res, nil
	}
	meta["pages"] = doc.Total
	res.Output = head.String() + pdf.Format(rel, doc)
	return res, nil
}

// unwrapURLError drops net/http's "Get "…":" prefix, which repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// decode turns body into UTF-8 by the charset its content type or
// its bytes declare.
func decode(body []byte, ctype string) string {
	if utf8.Valid(body) {
		return string(body)
	}
	r, err := charset.NewReader(bytes.NewReader(body), ctype)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return string(out)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// converter turns HTML into Markdown with GFM tables and absolute links.
var mdConverter = converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin()))

// htmlToMarkdown returns the page's title and its text as Markdown, with
// navigation, asides, footers, scripts, styles and forms' hidden parts
// left out.
func htmlToMarkdown(page, pageURL string) (title, md string, err error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return "", "", err
	}
	var drop []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Title:
				if title == "" && n.FirstChild != nil {
					title = oneLine(n.FirstChild.Data)
				}
				drop = append(drop, n)
				return
			case atom.Nav, atom.Aside, atom.Footer, atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe:
				drop = append(drop, n)
				return
			}
			for _, a := range n.Attr {
				if (a.Key == "role" && a.Val == "navigation") || a.Key == "hidden" {
					drop = append(drop, n)
					return
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, n := range drop {
		n.Parent.RemoveChild(n)
	}
	out, err := mdConverter.ConvertNode(doc, converter.WithDomain(pageURL))
	if err != nil {
		return title, "", err
	}
	return title, strings.TrimSpace(string(out)), nil
}
