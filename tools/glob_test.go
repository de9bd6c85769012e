package tools

import "testing"

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"**/*.go", "a/b/c/main.txt", false},
		{"a/**", "a/b/c", true},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "b/z", false},
		{"a/**/**/z", "a/x/z", true},
		{"./a/*", "a/x", true},
		{"a//b", "a/b", true},
		{"?.md", "x.md", true},
		{"?.md", "xy.md", false},
		{"[ab].txt", "b.txt", true},
		{"{src,test}/**/*.{ts,tsx}", "test/u/v.tsx", true},
		{"{src,test}/**/*.{ts,tsx}", "lib/v.ts", false},
		{"a{b,c{d,e}}f", "acef", true},
		{"a{b,c{d,e}}f", "acf", false},
		{`\*.go`, "*.go", true},
		{`\*.go`, "x.go", false},
		{"*", ".hidden", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestGlobMayMatchBelow(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "lib", false},
		{"src/*.go", "src/deep", false},
		{"src/**/*.go", "src/deep/er", true},
		{"*.go", "anything", false},
		{"**/*.go", "anything", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.MayMatchBelow(tt.dir); got != tt.want {
			t.Errorf("%q below %q = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func TestGlobRefuses(t *testing.T) {
	for _, p := range []string{"", "/abs/*", "../x", "a/../b", "[a", "{a,b", "a}", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}"} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("compileGlob(%q) accepted", p)
		}
	}
}

func FuzzGlob(f *testing.F) {
	for _, s := range []string{"**/*.go", "a{b,c{d,e}}f", `\{x}`, "[a-z]*/**"} {
		f.Add(s, "a/b/c.go")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		g.Match(path)
		g.MayMatchBelow(path)
	})
}
