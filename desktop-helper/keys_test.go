package main

import (
	"slices"
	"testing"

	"github.com/jezek/xgb/xproto"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string][]xproto.Keysym{
		"ctrl+a":       {0xffe3, 'a'},
		"Ctrl+Shift+T": {0xffe3, 0xffe1, 't'},
		"Return":       {0xff0d},
		"alt+F4":       {0xffe9, 0xffc1},
		"ctrl+plus":    {0xffe3, '+'},
		"ư":            {0x01000000 | 'ư'},
	} {
		got, err := parseKeys(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseKeys(%q) = %x, %v; want %x", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ctrl+", "ctrl++", "hyperdrive", "ctrl+ab"} {
		if _, err := parseKeys(bad); err == nil {
			t.Errorf("parseKeys(%q) accepted", bad)
		}
	}
}
