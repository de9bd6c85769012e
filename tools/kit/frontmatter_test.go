package kit

import (
	"strings"
	"testing"
)

func TestParseFrontMatter(t *testing.T) {
	tests := []struct {
		name, in string
		want     skillFront
		wantBody string
	}{
		{"none", "# Title\n\ntext\n", skillFront{}, "# Title\n\ntext"},
		{"front and body", "---\nname: git\ndescription: Git habits\nalways: true\n---\n\nUse small commits.\n", skillFront{"git", "Git habits", true}, "Use small commits."},
		{"empty front", "---\n---\nbody", skillFront{}, "body"},
		{"crlf and bom", "\xef\xbb\xbf---\r\nname: x\r\n---\r\nline 1\r\nline 2\r\n", skillFront{Name: "x"}, "line 1\nline 2"},
		{"no body", "---\nname: x\n---", skillFront{Name: "x"}, ""},
		{"rule later is body", "text\n---\nmore\n", skillFront{}, "text\n---\nmore"},
		{"unknown keys ignored", "---\nname: x\nallowed-tools: Read, Grep\n---\nb", skillFront{Name: "x"}, "b"},
		{"closing with trailing space", "---\nname: x\n--- \nb", skillFront{Name: "x"}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got skillFront
			body, err := parseFrontMatter("s.md", []byte(tc.in), &got)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("front matter %+v, want %+v", got, tc.want)
			}
			if body != tc.wantBody {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
		})
	}
}

func TestParseFrontMatterErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // prefix of the error
		wantMsg  string // part of the error
	}{
		{"unclosed", "---\nname: x\nbody\n", "dir/s.md:1: ", "never closed"},
		{"bad type", "---\nname: x\nalways: [1, 2]\n---\nb", "dir/s.md:3:9: ", "want true or false here, not a list"},
		{"bad yaml", "---\nname: x\ndescription: \"unclosed\n---\nb", "dir/s.md:3:14: ", "double-quoted"},
		{"not a mapping", "---\n- a\n---\nb", "dir/s.md:2:1: ", "mapping"},
		{"duplicate key", "---\nname: a\nname: b\n---\n", "dir/s.md:3:1: ", "already defined at [2:1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f skillFront
			_, err := parseFrontMatter("dir/s.md", []byte(tc.in), &f)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q, want it to start with %q and contain %q", err, tc.want, tc.wantMsg)
			}
		})
	}
}

func FuzzParseFrontMatter(f *testing.F) {
	f.Add("---\nname: x\n---\nbody")
	f.Add("---\n---\n")
	f.Add("---\nalways: [\n---\n")
	f.Add("no front matter")
	f.Fuzz(func(t *testing.T, in string) {
		var s skillFront
		body, err := parseFrontMatter("f.md", []byte(in), &s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.md:") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if body != strings.TrimSpace(body) {
			t.Errorf("body %q is not trimmed", body)
		}
	})
}
