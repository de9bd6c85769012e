package image_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	crewimage "github.com/my-agent-crew/crew/tools/image"
)

func jpegOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, h/2, color.RGBA{200, 30, 30, 255})
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPrepareDownscalesLongSide(t *testing.T) {
	p, err := crewimage.Prepare(jpegOf(t, 4000, 3000))
	if err != nil {
		t.Fatal(err)
	}
	if p.Width != 1568 || p.Height != 1176 || p.MIME != "image/jpeg" || p.OrigWidth != 4000 {
		t.Errorf("prepared %dx%d %s from %dx%d", p.Width, p.Height, p.MIME, p.OrigWidth, p.OrigHeight)
	}
	if _, err := jpeg.Decode(bytes.NewReader(p.Data)); err != nil {
		t.Errorf("output is no JPEG: %v", err)
	}
	url := p.DataURL()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/jpeg;base64,"))
	if err != nil || !bytes.Equal(raw, p.Data) {
		t.Errorf("data URL does not round-trip")
	}
	small := image.NewNRGBA(image.Rect(0, 0, 10, 20))
	var b bytes.Buffer
	png.Encode(&b, small)
	if p, err := crewimage.Prepare(b.Bytes()); err != nil || p.MIME != "image/png" || p.Width != 10 {
		t.Errorf("small png: %+v %v", p, err)
	}
}

func TestPrepareRefusesNonImagesAndHugeCanvases(t *testing.T) {
	if _, err := crewimage.Prepare([]byte("%PDF-1.7 not an image")); !errors.Is(err, crewimage.ErrNotImage) {
		t.Errorf("pdf: %v", err)
	}
	// A PNG header that declares 100000×100000 pixels: refused before decoding.
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	data := b.Bytes()
	copy(data[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0})
	binary.BigEndian.PutUint32(data[29:33], crc32.ChecksumIEEE(data[12:29]))
	if _, err := crewimage.Prepare(data); err == nil || !strings.Contains(err.Error(), "megapixel") {
		t.Errorf("huge canvas: %v", err)
	}
}
