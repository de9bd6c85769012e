package kit

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Command is a named prompt from .agents/commands/<name>.md: the owner sends
// "/name arguments" and the harness runs the prompt instead (Claude Code's
// custom slash commands).
type Command struct {
	Name         string // the file name without .md
	Description  string // front matter description, else the prompt's first line
	Path         string
	Body         string // the prompt, trimmed; $ARGUMENTS marks where arguments go
	ArgumentHint string // front matter argument-hint, e.g. "[date]"
}

type commandFront struct {
	Description  string `yaml:"description"`
	ArgumentHint string `yaml:"argument-hint"`
}

// maxFallbackDescription bounds a description taken from a prompt's first
// line.
const maxFallbackDescription = 100

// Commands returns the kit commands of the home and of the agent's folder,
// sorted by name; the agent's command replaces the home's of the same name.
// On error the commands that loaded are still returned, and the error names
// every file that did not.
func Commands(homeDir, agentDir string) ([]Command, error) {
	return loadAll(homeDir, agentDir, ".agents/commands", parseCommand, func(c Command) string { return c.Name })
}

func parseCommand(path string, data []byte) (Command, error) {
	var f commandFront
	body, err := parseFrontMatter(path, data, &f)
	if err != nil {
		return Command{}, err
	}
	desc := oneLine(f.Description)
	if desc == "" {
		first, _, _ := strings.Cut(body, "\n")
		desc = cutRunes(oneLine(strings.TrimLeft(first, "# ")), maxFallbackDescription)
	}
	return Command{Name: baseName(path), Description: desc, Path: path, Body: body, ArgumentHint: oneLine(f.ArgumentHint)}, nil
}

// CommandsSection is the system prompt's section listing the kit commands,
// so the model knows what the owner's "/name" messages are and can suggest
// them. It is "" when there are none.
func CommandsSection(cmds []Command) string {
	if len(cmds) == 0 {
		return ""
	}
	cmds = slices.SortedStableFunc(slices.Values(cmds), func(a, b Command) int { return cmp.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("# Kit commands\n\nThe owner can send these commands as messages, as \"/name\" followed by any arguments; the harness then replaces the message with the command's prompt. You may suggest them to the owner.\n")
	for _, c := range cmds {
		b.WriteString("\n- /" + c.Name)
		if hint := oneLine(c.ArgumentHint); hint != "" {
			b.WriteString(" " + hint)
		}
		if desc := oneLine(c.Description); desc != "" {
			b.WriteString(": " + desc)
		}
	}
	return b.String()
}

// Expand turns a message "/name arguments" into the prompt of the command
// called name: the body with every $ARGUMENTS replaced by the arguments, or,
// when the body has no $ARGUMENTS and there are arguments, the body followed
// by "\n\nArguments: " and them. The message is trimmed first; the name must
// match exactly and be followed by whitespace or the end. ok is false when
// the message is not one of cmds.
func Expand(cmds []Command, text string) (name, prompt string, ok bool) {
	text = strings.TrimSpace(text)
	rest, found := strings.CutPrefix(text, "/")
	if !found {
		return "", "", false
	}
	name, args := rest, ""
	if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
		name, args = rest[:i], strings.TrimSpace(rest[i:])
	}
	for _, c := range cmds {
		if c.Name != name {
			continue
		}
		switch {
		case strings.Contains(c.Body, "$ARGUMENTS"):
			return name, strings.ReplaceAll(c.Body, "$ARGUMENTS", args), true
		case args != "":
			return name, c.Body + "\n\nArguments: " + args, true
		default:
			return name, c.Body, true
		}
	}
	return "", "", false
}

// cutRunes shortens s to at most n characters, ending with "…" when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
