package desktop

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// computer_act's gate (seed 000 §2.4 and §5, R-GATE-4). Refusals come
// before anyone is asked: apps outside computer_apps, text such as sudo,
// combinations that quit an app or empty the trash, text for a secure
// field. Asks, even in an autonomous conversation: bringing an app to the
// front, clicking by coordinates, a lone Enter or Space, keys outside the
// common set, and text or element names carrying a stop word.

// elevating matches text that would raise privileges if it landed in a
// terminal or a run dialog; su only where a command starts ("su -",
// "su root", or alone), since "su" is also a Vietnamese word.
var elevating = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:^|[^\pL\pN_-])(sudo|pkexec|doas|gksudo|gksu|kdesu|kdesudo|run0)(?:[^\pL\pN_-]|$)`),
	regexp.MustCompile(`(?i)(?:^|[;&|(\n]\s*)(su)(?:\s+-|\s+root\b|\s*$|\s*[;&|\n])`),
}

// elevates returns the privilege-raising command text holds, or "".
func elevates(text string) string {
	for _, re := range elevating {
		if m := re.FindStringSubmatch(text); m != nil {
			return m[1]
		}
	}
	return ""
}

// refusedCombos quit an app or the session, or delete past the trash.
var refusedCombos = map[string]string{
	"ctrl+q":                "quits the app",
	"ctrl+shift+q":          "quits the app",
	"super+q":               "quits the app",
	"alt+f4":                "closes the app's window",
	"ctrl+w":                "closes the window or tab",
	"ctrl+shift+w":          "closes the window",
	"ctrl+alt+delete":       "ends the session",
	"ctrl+alt+del":          "ends the session",
	"ctrl+alt+backspace":    "kills the X session",
	"shift+delete":          "deletes past the trash",
	"shift+del":             "deletes past the trash",
	"ctrl+shift+delete":     "empties the trash",
	"ctrl+shift+del":        "empties the trash",
	"shift+super+delete":    "empties the trash",
	"ctrl+alt+shift+delete": "empties the trash",
}

// commonKeys are keys and combinations that only move, select or edit
// text; any other key asks. A lone letter or digit is common too.
var commonKeys = map[string]bool{
	"tab": true, "shift+tab": true, "escape": true, "backspace": true,
	"up": true, "down": true, "left": true, "right": true, "home": true, "end": true,
	"page_up": true, "page_down": true,
	"shift+up": true, "shift+down": true, "shift+left": true, "shift+right": true,
	"shift+home": true, "shift+end": true, "ctrl+left": true, "ctrl+right": true,
	"ctrl+home": true, "ctrl+end": true, "ctrl+shift+left": true, "ctrl+shift+right": true,
	"ctrl+a": true, "ctrl+c": true, "ctrl+x": true, "ctrl+v": true, "ctrl+z": true,
	"ctrl+shift+z": true, "ctrl+y": true, "ctrl+f": true,
}

// keyAliases spell a key the one way the rules compare.
var keyAliases = map[string]string{
	"control": "ctrl", "esc": "escape", "return": "enter", "kp_enter": "enter", "del": "delete",
	"pageup": "page_up", "pagedown": "page_down", "meta": "super", " ": "space",
}

// canonKeys is a combination in lower case, aliases resolved, modifiers
// first in a fixed order: "Shift+Ctrl+Q" and "ctrl+shift+q" compare equal.
func canonKeys(keys string) string {
	var mods, rest []string
	for _, p := range strings.Split(strings.ToLower(strings.TrimSpace(keys)), "+") {
		p = strings.TrimSpace(p)
		if a, ok := keyAliases[p]; ok {
			p = a
		}
		switch p {
		case "ctrl", "alt", "shift", "super":
			mods = append(mods, p)
		default:
			rest = append(rest, p)
		}
	}
	order := map[string]int{"ctrl": 0, "alt": 1, "shift": 2, "super": 3}
	slices.SortFunc(mods, func(a, b string) int { return order[a] - order[b] })
	return strings.Join(append(mods, rest...), "+")
}

// stopWords make a call ask: what they name is hard to take back.
// Vietnamese forms are written in NFC, with both places of the tone mark
// where both are in use (xoá/xóa).
var stopWords = []string{
	"delete", "remove", "erase", "wipe", "destroy", "trash", "format", "uninstall",
	"send", "submit", "post", "publish", "share", "reply", "forward",
	"pay", "payment", "purchase", "buy", "order", "checkout", "transfer", "donate", "subscribe",
	"confirm", "approve", "accept", "sign", "shutdown", "shut down", "restart", "reboot", "log out", "sign out",
	"xoá", "xóa", "gỡ", "gửi", "đăng", "chia sẻ", "trả lời", "chuyển tiếp",
	"thanh toán", "trả tiền", "mua", "đặt hàng", "chuyển khoản", "chuyển tiền", "ủng hộ", "đăng ký",
	"xác nhận", "đồng ý", "chấp nhận", "ký", "tắt máy", "khởi động lại", "đăng xuất", "huỷ", "hủy",
}

// words splits s into lower-case NFC words.
func words(s string) []string {
	s = norm.NFC.String(strings.ToLower(s))
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Mn, r)
	})
}

// stopWord returns the first stop word s carries as whole words, or "".
func stopWord(s string) string {
	w := " " + strings.Join(words(s), " ") + " "
	for _, sw := range stopWords {
		if strings.Contains(w, " "+sw+" ") {
			return sw
		}
	}
	return ""
}

// refusal says why the call is certain to be refused, or nil. v is what
// the conversation last saw (zero when unknown, as after a restart).
func refusal(apps []string, a wire.Act, v view) error {
	if len(apps) == 0 {
		return fmt.Errorf("computer_act: this agent's computer_apps is empty, so it may act in no app")
	}
	if a.FrameID == "" {
		return fmt.Errorf("computer_act: frame_id is missing: take a computer_screenshot or computer_observe first and pass its frame_id")
	}
	if v.frame != "" && a.FrameID != v.frame {
		return fmt.Errorf("computer_act: frame %q is not your latest frame (%s): act on what the latest screenshot or outline shows", a.FrameID, v.frame)
	}
	switch a.Action {
	case wire.ActFront:
		if strings.TrimSpace(a.App) == "" {
			return fmt.Errorf("computer_act: front needs app")
		}
		if !(&wire.App{Class: a.App}).Matches(apps) {
			return fmt.Errorf("computer_act: %s is not in this agent's computer_apps (%s)", a.App, strings.Join(apps, ", "))
		}
		return nil
	case wire.ActClick, wire.ActScroll:
		if a.Ref == "" && (a.X == nil || a.Y == nil) {
			return fmt.Errorf("computer_act: %s needs a ref or both x and y", a.Action)
		}
	case wire.ActType:
		if a.Text == "" {
			return fmt.Errorf("computer_act: type needs text")
		}
		if cmd := elevates(a.Text); cmd != "" {
			return fmt.Errorf("computer_act: the text holds %q, which raises privileges; the desktop tools never type that", cmd)
		}
	case wire.ActKey:
		if strings.TrimSpace(a.Keys) == "" {
			return fmt.Errorf("computer_act: key needs keys")
		}
		if why, ok := refusedCombos[canonKeys(a.Keys)]; ok {
			return fmt.Errorf("computer_act: %s %s; the desktop tools never press it", a.Keys, why)
		}
	default:
		return fmt.Errorf("computer_act: unknown action %q: want click, type, key, scroll or front", a.Action)
	}
	if v.front != nil && v.frame == a.FrameID && !v.front.Matches(apps) {
		return fmt.Errorf("computer_act: the app in front in frame %s is %s, which is not in this agent's computer_apps (%s)",
			a.FrameID, v.front.Name(), strings.Join(apps, ", "))
	}
	if a.Ref != "" && v.frame != "" { // what this conversation has seen is known
		e, ok := v.refs[a.Ref]
		if !ok {
			return fmt.Errorf("computer_act: ref %q is not in your latest outline: observe again and use a ref it shows", a.Ref)
		}
		if e.Role == "password text" {
			return fmt.Errorf("computer_act: ref %s is a secure (password) field; the desktop tools never act on one", a.Ref)
		}
	}
	return nil
}

// askReason says why the call asks even in an autonomous conversation, or
// "".
func askReason(a wire.Act, v view) string {
	switch a.Action {
	case wire.ActFront:
		return fmt.Sprintf("brings %s to the front", a.App)
	case wire.ActClick, wire.ActScroll:
		if a.Ref == "" && a.X != nil && a.Y != nil {
			if a.Action == wire.ActClick {
				return fmt.Sprintf("clicks by coordinates (%d,%d), not on an element of the outline", *a.X, *a.Y)
			}
			return fmt.Sprintf("scrolls at coordinates (%d,%d)", *a.X, *a.Y)
		}
	case wire.ActKey:
		k := canonKeys(a.Keys)
		if k == "enter" || k == "space" {
			return fmt.Sprintf("presses a lone %s, which confirms whatever has the focus", a.Keys)
		}
		if !commonKeys[k] && !singleChar(k) {
			return fmt.Sprintf("presses %s, which is not one of the common editing keys", a.Keys)
		}
	case wire.ActType:
		if sw := stopWord(a.Text); sw != "" {
			return fmt.Sprintf("types text with %q", sw)
		}
		if strings.ContainsAny(a.Text, "\n\r") {
			return "types text with a line break (Enter)"
		}
	}
	if a.Ref != "" {
		e, ok := v.refs[a.Ref]
		if !ok || v.frame != a.FrameID {
			return fmt.Sprintf("acts on %s, an element this conversation has not seen in its latest outline", a.Ref)
		}
		if sw := stopWord(e.Name); sw != "" {
			return fmt.Sprintf("acts on %s %q, whose name says %q", e.Role, e.Name, sw)
		}
	}
	return ""
}

func singleChar(k string) bool { return len([]rune(k)) == 1 }
