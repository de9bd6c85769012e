package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jezek/xgb/xproto"
)

// keyNames are the named keys a combination may use, by lower-case name.
var keyNames = map[string]xproto.Keysym{
	"ctrl": 0xffe3, "control": 0xffe3, "shift": 0xffe1, "alt": 0xffe9, "super": 0xffeb, "meta": 0xffe7,
	"return": 0xff0d, "enter": 0xff0d, "kp_enter": 0xff8d, "tab": 0xff09, "escape": 0xff1b, "esc": 0xff1b,
	"backspace": 0xff08, "delete": 0xffff, "del": 0xffff, "insert": 0xff63, "space": 0x20,
	"home": 0xff50, "end": 0xff57, "page_up": 0xff55, "pageup": 0xff55, "page_down": 0xff56, "pagedown": 0xff56,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54, "menu": 0xff67, "plus": 0x2b, "minus": 0x2d, "print": 0xff61,
	"f1": 0xffbe, "f2": 0xffbf, "f3": 0xffc0, "f4": 0xffc1, "f5": 0xffc2, "f6": 0xffc3,
	"f7": 0xffc4, "f8": 0xffc5, "f9": 0xffc6, "f10": 0xffc7, "f11": 0xffc8, "f12": 0xffc9,
}

// parseKeys reads a combination such as "ctrl+shift+t", "Return" or "a"
// into keysyms, modifiers first as written.
func parseKeys(s string) ([]xproto.Keysym, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("keys is empty; write a key or a combination such as ctrl+a")
	}
	var out []xproto.Keysym
	for _, part := range strings.Split(s, "+") {
		p := strings.TrimSpace(part)
		if p == "" {
			return nil, fmt.Errorf("keys %q: an empty key between + (write plus for the + key)", s)
		}
		if ks, ok := keyNames[strings.ToLower(p)]; ok {
			out = append(out, ks)
			continue
		}
		if utf8.RuneCountInString(p) == 1 {
			r, _ := utf8.DecodeRuneInString(p)
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A' // a combination names the key, not the capital
			}
			out = append(out, runeKeysym(r))
			continue
		}
		return nil, fmt.Errorf("keys %q: unknown key %q", s, p)
	}
	return out, nil
}
