package telegram

import (
	"strings"
	"testing"
	"unicode/utf16"
)

func TestSplit(t *testing.T) {
	lines := strings.Repeat("abcdefghi\n", 10) // 100 bytes
	emoji := strings.Repeat("😀", 30)           // 60 UTF-16 units
	for _, tc := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"short", "hi", 10, []string{"hi"}},
		{"empty", "", 10, []string{""}},
		{"lines", lines, 25, []string{"abcdefghi\nabcdefghi", "abcdefghi\nabcdefghi", "abcdefghi\nabcdefghi", "abcdefghi\nabcdefghi", "abcdefghi\nabcdefghi\n"}},
		{"no break", strings.Repeat("x", 25), 10, []string{strings.Repeat("x", 10), strings.Repeat("x", 10), "xxxxx"}},
		{"surrogates", emoji, 25, []string{strings.Repeat("😀", 12), strings.Repeat("😀", 12), strings.Repeat("😀", 6)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for _, p := range got {
				if n := len(utf16.Encode([]rune(p))); n > tc.limit {
					t.Errorf("part of %d units > %d", n, tc.limit)
				}
			}
		})
	}
}

func TestParseCallback(t *testing.T) {
	for _, tc := range []struct {
		data                string
		id                  string
		approve, always, ok bool
	}{
		{"a:X1:approve", "X1", true, false, true},
		{"a:X1:always", "X1", true, true, true},
		{"a:X1:deny", "X1", false, false, true},
		{"a:X1:maybe", "", false, false, false},
		{"b:X1:deny", "", false, false, false},
		{"a::deny", "", false, false, false},
	} {
		id, approve, always, ok := parseCallback(tc.data)
		if id != tc.id || approve != tc.approve || always != tc.always || ok != tc.ok {
			t.Errorf("parseCallback(%q) = %q %v %v %v", tc.data, id, approve, always, ok)
		}
	}
}

func TestChatOf(t *testing.T) {
	for conv, want := range map[string]int64{"telegram-42-20261130": 42, "telegram--1001-20261130": -1001, "telegram-42-20261130-2": 42} {
		if got, ok := chatOf(conv); !ok || got != want {
			t.Errorf("chatOf(%q) = %d %v", conv, got, ok)
		}
	}
	for _, conv := range []string{"web-20261130", "coach-telegram-42-20261130", "telegram-x-1", "telegram-42-2026113", ""} {
		if _, ok := chatOf(conv); ok {
			t.Errorf("chatOf(%q) ok", conv)
		}
	}
}
