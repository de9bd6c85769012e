package pdf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) == 3 && os.Args[1] == childName {
		child(os.Args[2])
	}
}

// child extracts the PDF on stdin and exits; it never returns.
func child(arg string) {
	out := json.NewEncoder(os.Stdout)
	finish := func(r reply) {
		out.Encode(r)
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	if !raceEnabled { // the race detector maps terabytes of shadow memory
		lim := unix.Rlimit{Cur: memoryLimit, Max: memoryLimit}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
			finish(reply{Error: "pdf: memory limit: " + err.Error()})
		}
	}
	var req request
	if err := json.Unmarshal([]byte(arg), &req); err != nil {
		finish(reply{Error: "pdf: child request: " + err.Error()})
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, MaxBytes+1))
	if err != nil {
		finish(reply{Error: "pdf: reading the PDF: " + err.Error()})
	}
	doc, notPDF, err := extract(data, req)
	if err != nil {
		finish(reply{Error: err.Error(), NotPDF: notPDF})
	}
	finish(reply{Doc: *doc})
}

func extract(data []byte, req request) (doc *Doc, notPDF bool, err error) {
	ctx := context.Background()
	rc := runtimeConfig().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling)
	if req.CacheDir != "" {
		if err := os.MkdirAll(req.CacheDir, 0o700); err == nil {
			if cc, err := wazero.NewCompilationCacheWithDir(req.CacheDir); err == nil {
				rc = rc.WithCompilationCache(cc)
			}
		}
	}
	pool, err := webassembly.Init(webassembly.Config{
		MinIdle: 1, MaxIdle: 1, MaxTotal: 1, RuntimeConfig: rc,
		FSConfig: wazero.NewFSConfig(), // no host files: the PDF comes as bytes
		Stdout:   io.Discard, Stderr: io.Discard,
	})
	if err != nil {
		return nil, false, fmt.Errorf("pdf: starting PDFium: %w", err)
	}
	inst, err := pool.GetInstance(30 * time.Second)
	if err != nil {
		return nil, false, fmt.Errorf("pdf: starting PDFium: %w", err)
	}
	_ = ctx
	opened, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		return nil, true, fmt.Errorf("PDFium cannot open it (%v)", err)
	}
	count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: opened.Document})
	if err != nil {
		return nil, true, fmt.Errorf("PDFium cannot count its pages (%v)", err)
	}
	total := count.PageCount
	pages := req.Pages
	if pages == nil {
		for n := 1; n <= min(total, MaxPages); n++ {
			pages = append(pages, n)
		}
	}
	doc = &Doc{Total: total}
	for _, n := range pages {
		if n < 1 || n > total {
			return nil, false, fmt.Errorf("page %d does not exist: the PDF has %d page(s)", n, total)
		}
		txt, err := inst.GetPageText(&requests.GetPageText{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: opened.Document, Index: n - 1}}})
		if err != nil {
			return nil, false, fmt.Errorf("page %d: %v", n, err)
		}
		text := strings.ReplaceAll(txt.Text, "\r\n", "\n")
		text = strings.ReplaceAll(text, "\r", "\n")
		doc.Pages = append(doc.Pages, Page{Number: n, Text: text})
	}
	return doc, false, nil
}
