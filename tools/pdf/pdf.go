// Package pdf extracts the text of PDF files, page by page, and is the
// pdf_read tool.
//
// The extractor is PDFium compiled to WebAssembly (go-pdfium's webassembly
// backend on wazero, no cgo), which reads the Vietnamese text of real PDFs
// correctly where the pure-Go parsers garble it. Its first start compiles
// the module (about 3 s and 330 MB), so it never runs inside the server:
// Text starts the binary itself again as a child process (argv[1]
// childName) with the PDF on stdin, an address-space limit and a wall
// timeout, and reads the pages back as JSON on stdout. The child starts
// through tools/shell like every process an agent's action causes: its
// own namespaces with the home hidden (but for the cache), no network,
// Landlock writes only in the cache, seccomp. A hostile PDF can then at
// worst kill its own child. With Options.CacheDir the compiled
// module is kept on disk and later starts take about 100 ms.
package pdf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/tools/shell"
)

// Limits of one extraction.
const (
	// MaxBytes is the largest PDF Text accepts.
	MaxBytes = 32 << 20
	// MaxPages is how many pages one call returns at most.
	MaxPages = 50
	// DefaultTimeout bounds one child process, compile included.
	DefaultTimeout = 60 * time.Second
	// memoryLimit is the child's address space (RLIMIT_AS).
	memoryLimit = 2 << 30
)

// ErrNotPDF: the bytes are not a PDF PDFium can open (or it needs a
// password).
var ErrNotPDF = errors.New("not a readable PDF")

// ErrTooLarge: the PDF is over MaxBytes.
var ErrTooLarge = errors.New("PDF too large")

// Page is the text of one page; Number counts from 1.
type Page struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// Options of Text.
type Options struct {
	// Pages are the page numbers wanted (from 1), in order; nil: from the
	// first, up to MaxPages. Numbers past the end are an error.
	Pages []int
	// CacheDir keeps the compiled module between runs; "" compiles anew.
	CacheDir string
	// Home is the crew home, hidden from the child but for CacheDir.
	Home string
	// Timeout of the child; 0 is DefaultTimeout.
	Timeout time.Duration
	// Sandbox starts the child (nil: nothing is extracted).
	Sandbox *shell.Sandbox
}

// Doc is what Text read: the pages asked for and how many there are.
type Doc struct {
	Pages []Page `json:"pages"`
	Total int    `json:"total"`
}

// childName is argv[1] of the extraction child.
const childName = "crew-pdf-text"

// request is what the parent tells the child in argv[1].
type request struct {
	Pages    []int  `json:"pages,omitempty"`
	CacheDir string `json:"cache_dir,omitempty"`
}

// reply is the child's stdout.
type reply struct {
	Doc
	Error  string `json:"error,omitempty"`
	NotPDF bool   `json:"not_pdf,omitempty"`
}

// Text returns the text of the pages of data that opts asks for. The text
// is as PDFium reads it (line breaks kept, \r\n made \n).
func Text(ctx context.Context, data []byte, opts Options) (*Doc, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d MiB limit", ErrTooLarge, len(data), MaxBytes>>20)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(data[:min(len(data), 1024)], "\x00\t\n\r "), []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: no %%PDF- header", ErrNotPDF)
	}
	if len(opts.Pages) > MaxPages {
		return nil, fmt.Errorf("%d pages asked for, at most %d per call", len(opts.Pages), MaxPages)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	arg, err := json.Marshal(request{Pages: opts.Pages, CacheDir: opts.CacheDir})
	if err != nil {
		return nil, err
	}
	env := []string{"GOMAXPROCS=1"}
	if v := os.Getenv("GORACE"); v != "" {
		env = append(env, "GORACE="+v)
	}
	pol := &shell.Policy{Network: false}
	var view *shell.View
	if opts.Home != "" {
		view = &shell.View{Home: opts.Home}
	}
	if opts.CacheDir != "" && os.MkdirAll(opts.CacheDir, 0o700) == nil {
		pol.WritePaths = []string{opts.CacheDir}
		if view != nil {
			view.Grant(opts.CacheDir)
		}
	}
	var stdout bytes.Buffer
	out, runErr := opts.Sandbox.Run(ctx, shell.Command{
		Exec: []string{"/proc/self/exe", childName, string(arg)}, Dir: "/", Env: env, Timeout: timeout,
		Stdin: bytes.NewReader(data), Stdout: &stdout, View: view, Sandbox: pol,
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("pdf: extraction stopped after %s: %w", timeout, ctx.Err())
	}
	if runErr != nil {
		return nil, fmt.Errorf("pdf: extractor not run: %w", runErr)
	}
	var r reply
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("pdf: extractor failed (exit %d %s): %s", out.ExitCode, out.Signal, lastLine(out.Text))
	}
	if r.NotPDF {
		return nil, fmt.Errorf("%w: %s", ErrNotPDF, r.Error)
	}
	if r.Error != "" {
		return nil, errors.New(r.Error)
	}
	return &r.Doc, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	if s == "" {
		return "no output"
	}
	return s
}
