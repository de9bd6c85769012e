package pdf_test

import (
	"bytes"
	"fmt"
	"strings"
)

// makePDF writes a PDF whose pages each hold the given lines, in a Type0
// font with Identity-H codes and a ToUnicode map: the way real producers
// (browsers, office suites) write Vietnamese, so the extractor has to map
// glyph codes back to text rather than read bytes as Latin-1.
func makePDF(pages [][]string) []byte {
	codes := map[rune]int{}
	var order []rune
	for _, p := range pages {
		for _, l := range p {
			for _, r := range l {
				if _, ok := codes[r]; !ok {
					codes[r] = len(order) + 1
					order = append(order, r)
				}
			}
		}
	}
	var objs []string
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	catalog := add("") // filled below
	pagesObj := add("")
	var cmap strings.Builder
	cmap.WriteString("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n1 begincodespacerange <0000> <FFFF> endcodespacerange\n")
	fmt.Fprintf(&cmap, "%d beginbfchar\n", len(order))
	for _, r := range order {
		fmt.Fprintf(&cmap, "<%04X> <%04X>\n", codes[r], r)
	}
	cmap.WriteString("endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end\n")
	toUni := add(stream(cmap.String()))
	desc := add("<< /Type /FontDescriptor /FontName /NotoSans /Flags 32 /FontBBox [0 -200 1000 900] /ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>")
	cid := add(fmt.Sprintf("<< /Type /Font /Subtype /CIDFontType2 /BaseFont /NotoSans /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R /DW 500 >>", desc))
	font := add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /NotoSans /Encoding /Identity-H /DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", cid, toUni))
	var kids []string
	for _, p := range pages {
		var c strings.Builder
		c.WriteString("BT /F1 12 Tf 14 TL 72 720 Td\n")
		for _, l := range p {
			c.WriteString("<")
			for _, r := range l {
				fmt.Fprintf(&c, "%04X", codes[r])
			}
			c.WriteString("> Tj T*\n")
		}
		c.WriteString("ET\n")
		content := add(stream(c.String()))
		kids = append(kids, fmt.Sprintf("%d 0 R", add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", pagesObj, font, content))))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj)
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, catalog, xref)
	return b.Bytes()
}

func stream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(s), s)
}
