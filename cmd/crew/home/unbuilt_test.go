package home

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The keys of the design that this build does not act on. An issue that
// builds one removes it here and from unbuilt.
var wantUnbuilt = map[string][]string{
	"config.yaml": {},
	"agent.yaml":  {},
}

// A key that would do nothing is refused where it is written, never
// accepted silently.
func TestUnbuiltKeysRefused(t *testing.T) {
	listed := 0
	for file, keys := range wantUnbuilt {
		for _, key := range keys {
			listed++
			t.Run(file+"/"+key, func(t *testing.T) {
				dir := newHome(t)
				path := filepath.Join(dir, file)
				// The key on line 3, nested one level when dotted.
				content, want := "# a comment\nname: x\n", ":3:1: "
				if file == "config.yaml" {
					content = "# a comment\ntimezone: UTC\n"
				}
				if parent, leaf, nested := strings.Cut(key, "."); nested {
					content += parent + ":\n  " + leaf + ": x\n"
					want = ":4:3: "
				} else {
					content += key + ": x\n"
				}
				writeFile(t, path, content)
				err := loadErr(t, dir, file)
				want = path + want + key + ": not available in this build"
				if err == nil || err.Error() != want {
					t.Fatalf("error = %v\nwant    %s", err, want)
				}
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != key {
					t.Errorf("ConfigError = %+v, want Key %q", ce, key)
				}
			})
		}
	}
	if listed != len(unbuilt) {
		t.Errorf("unbuilt lists %d keys, this test %d: keep them the same", len(unbuilt), listed)
	}
}

// The files crew init and crew agent add write load clean and do not
// mention, even in a comment, a key this build refuses.
func TestInitFilesMentionOnlyWhatWorks(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range Templates() {
		if slices.Contains(Examples, name) {
			continue // Init installed it
		}
		if _, err := AddAgent(dir, name); err != nil {
			t.Fatal(err)
		}
	}
	h := mustLoad(t, dir)
	if len(h.Problems) != 0 {
		t.Fatalf("problems: %v", h.Problems)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	agents, _ := filepath.Glob(filepath.Join(dir, "agents", "*", "agent.yaml"))
	files = append(files, agents...)
	if want := 2 + len(Templates()); len(files) != want {
		t.Fatalf("found %d files %v, want config.yaml, agent.yaml and every template (%d)", len(files), files, want)
	}
	for _, path := range files {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range unbuilt {
			leaf := u.key[strings.LastIndexByte(u.key, '.')+1:]
			if m := regexp.MustCompile(`(?m)^[\s#]*` + regexp.QuoteMeta(leaf) + `:`).Find(body); m != nil {
				t.Errorf("%s mentions %s (%q), which this build refuses", path, u.key, m)
			}
		}
	}
}
