// Package image prepares workspace images for a vision model: it checks
// the type and size, scales the long side down to MaxSide and re-encodes,
// so what is sent is small and always a format the providers take (JPEG,
// or PNG for images that may carry transparency or sharp edges).
package image

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders: png, jpeg, gif, webp
	"image/jpeg"
	"image/png"
	"net/http"
	"strings"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"
)

// Limits.
const (
	// MaxBytes is the largest file Prepare reads.
	MaxBytes = 20 << 20
	// MaxPixels refuses images too large to decode safely (a small file can
	// declare a huge canvas).
	MaxPixels = 50_000_000
	// MaxSide is the longest side sent to a model.
	MaxSide = 1568
)

// ErrNotImage: the bytes are not an image this harness reads.
var ErrNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// Prepared is an image ready for a model.
type Prepared struct {
	MIME          string // image/jpeg or image/png
	Data          []byte
	Width, Height int // as sent
	// OrigWidth and OrigHeight are the file's.
	OrigWidth, OrigHeight int
}

// DataURL is the image as a data: URL, the form OpenAI-compatible APIs take
// in an image_url part.
func (p *Prepared) DataURL() string {
	return "data:" + p.MIME + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// IsImage says whether name looks like an image by its extension.
func IsImage(name string) bool {
	n := strings.ToLower(name)
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".gif", ".webp"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// Prepare decodes data, scales it to at most MaxSide on its long side and
// re-encodes it: PNG and GIF as PNG, the rest as JPEG quality 85.
func Prepare(data []byte) (*Prepared, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("image is %d bytes, over the %d MiB limit", len(data), MaxBytes>>20)
	}
	ct := http.DetectContentType(data)
	switch ct {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return nil, fmt.Errorf("%w (looks like %s)", ErrNotImage, ct)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > MaxPixels {
		return nil, fmt.Errorf("image is %d×%d pixels, over the %d megapixel limit", cfg.Width, cfg.Height, MaxPixels/1_000_000)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	out := src
	if long := max(w, h); long > MaxSide {
		nw, nh := w*MaxSide/long, h*MaxSide/long
		dst := image.NewRGBA(image.Rect(0, 0, max(nw, 1), max(nh, 1)))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
		out = dst
	}
	p := &Prepared{OrigWidth: w, OrigHeight: h, Width: out.Bounds().Dx(), Height: out.Bounds().Dy()}
	var buf bytes.Buffer
	if ct == "image/png" || ct == "image/gif" {
		p.MIME = "image/png"
		err = png.Encode(&buf, out)
	} else {
		p.MIME = "image/jpeg"
		err = jpeg.Encode(&buf, out, &jpeg.Options{Quality: 85})
	}
	if err != nil {
		return nil, fmt.Errorf("re-encoding the image: %w", err)
	}
	p.Data = buf.Bytes()
	return p, nil
}
