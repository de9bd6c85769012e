package pdf_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/pdf"
	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// Each extraction is a child process (about 12 s under the race detector,
// which runs PDFium interpreted), so the tests make four.

// cacheDir is shared by the package's tests, so PDFium compiles once.
var cacheDir string

func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "pdf-home-")
	if err != nil {
		panic(err)
	}
	cacheDir = pdf.CacheDir(home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

var invoice = [][]string{
	{"Hóa đơn số 42 — Invoice 42", "Khách hàng: Nguyễn Thị Ánh Tuyết"},
	{"Tổng cộng: 1.250.000 ₫.", "Cảm ơn quý khách!"},
	{"Trang ba"},
}

func TestTextReadsVietnamesePerPage(t *testing.T) {
	doc, err := pdf.Text(t.Context(), makePDF(invoice), pdf.Options{CacheDir: cacheDir, Sandbox: shelltest.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Total != 3 || len(doc.Pages) != 3 {
		t.Fatalf("total %d, pages %d", doc.Total, len(doc.Pages))
	}
	for i, p := range doc.Pages {
		if p.Number != i+1 {
			t.Errorf("page %d numbered %d", i+1, p.Number)
		}
		if got, want := strings.Fields(p.Text), strings.Fields(strings.Join(invoice[i], "\n")); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("page %d:\n got %q\nwant %q", i+1, p.Text, strings.Join(invoice[i], "\n"))
		}
		if i == 0 && !strings.Contains(p.Text, "Hóa đơn số 42 — Invoice 42\n") {
			t.Errorf("line break lost: %q", p.Text)
		}
	}
}

func TestTextRefusesWhatIsNotAPDF(t *testing.T) {
	for name, data := range map[string][]byte{
		"no header": []byte("hello"),
		"garbage":   append([]byte("%PDF-1.7\n"), make([]byte, 4000)...),
	} {
		if _, err := pdf.Text(t.Context(), data, pdf.Options{CacheDir: cacheDir, Sandbox: shelltest.New(t)}); !errors.Is(err, pdf.ErrNotPDF) {
			t.Errorf("%s: err %v, want ErrNotPDF", name, err)
		}
	}
	if _, err := pdf.Text(t.Context(), make([]byte, pdf.MaxBytes+1), pdf.Options{}); !errors.Is(err, pdf.ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
}

func TestPdfReadTool(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "inbox"), 0o700)
	os.WriteFile(filepath.Join(ws, "inbox", "hoadon.pdf"), makePDF(invoice), 0o600)
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("not a pdf"), 0o600)
	env := tools.Env{Workspace: ws, HomeDir: filepath.Dir(filepath.Dir(filepath.Dir(cacheDir)))}
	run := func(args string) tools.Result {
		t.Helper()
		res, err := pdf.Tool(shelltest.New(t)).Run(t.Context(), env, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(`{"path":"inbox/hoadon.pdf","pages":"2-3"}`)
	for _, want := range []string{"--- page 2 of 3 ---\nTổng cộng: 1.250.000 ₫.", "--- page 3 of 3 ---", "UNTRUSTED DATA id=", "source=pdf:inbox/hoadon.pdf", "[read 2 page(s) of 3]"} {
		if res.IsError || !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if strings.Contains(res.Output, "Hóa đơn") {
		t.Errorf("page 1 shown though pages 2-3 were asked for")
	}
	for args, want := range map[string]string{
		`{"path":"../outside.pdf"}`:                  "outside",
		`{"path":"note.txt"}`:                        "not a PDF",
		`{"path":"missing.pdf"}`:                     "missing.pdf",
		`{"path":"inbox/hoadon.pdf","pages":"0"}`:    "pages count from 1",
		`{"path":"inbox/hoadon.pdf","pages":"5-2"}`:  "not a range",
		`{"path":"inbox/hoadon.pdf","pages":"9"}`:    "has 3 page(s)",
		`{"path":"inbox/hoadon.pdf","pages":"1-60"}`: "at most 50",
	} {
		if res := run(args); !res.IsError || !strings.Contains(res.Output, want) {
			t.Errorf("%s: %+v, want an error with %q", args, res, want)
		}
	}
}

func TestParsePages(t *testing.T) {
	got, err := pdf.ParsePages(" 3, 1-2 ,2,7-8")
	if err != nil || fmt.Sprint(got) != "[3 1 2 7 8]" {
		t.Errorf("got %v %v", got, err)
	}
	if got, err := pdf.ParsePages(""); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}
