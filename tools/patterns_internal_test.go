package tools

import (
	"fmt"
	"testing"
)

// TestCompiledPatternsStayAtTheirBound: the process's memo of compiled
// policy patterns holds at most patternCacheMax, however many distinct
// patterns a long-running home brings (a config edited while it runs),
// lets the least recently used go first, and still answers every
// pattern, invalid ones included, the same after it was let go.
func TestCompiledPatternsStayAtTheirBound(t *testing.T) {
	c := newPatternCache(4)
	for i := range 5 {
		if _, err := c.compile(fmt.Sprintf("^p%d$", i)); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			c.compile("^p0$") // used again: p1 is now the oldest
		}
	}
	if n := c.len(); n != 4 {
		t.Fatalf("after 5 distinct patterns the memo holds %d, want its bound 4", n)
	}
	if _, ok := c.byKey["^p1$"]; ok {
		t.Error("the least recently used pattern ^p1$ was kept")
	}
	if _, ok := c.byKey["^p0$"]; !ok {
		t.Error("^p0$, used again, was let go before an older one")
	}
	re, err := c.compile("^p1$")
	if err != nil || !re.MatchString("p1") {
		t.Fatalf("a pattern let go compiles again: %v", err)
	}
	if _, err := c.compile("(["); err == nil {
		t.Fatal("an invalid pattern compiled")
	}
	if _, err := c.compile("(["); err == nil {
		t.Fatal("an invalid pattern, from the memo, compiled")
	}
	if n := c.len(); n != 4 {
		t.Fatalf("the memo holds %d after N+1 more uses, want 4", n)
	}

	// The process's memo, through the gate's matcher.
	for i := range patternCacheMax + 1 {
		if _, ok := firstMatch([]string{fmt.Sprintf("^cmd%d ", i)}, "cmd0 x", true); ok != (i == 0) {
			t.Fatalf("pattern %d matched %v", i, ok)
		}
	}
	if n := compiled.len(); n > patternCacheMax {
		t.Fatalf("the process's memo holds %d patterns, bound %d", n, patternCacheMax)
	}
}
