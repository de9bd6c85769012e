package kit

import (
	"cmp"
	"slices"
	"strings"
)

// Skill is advice for one kind of work, from skills/<file>.md: its index
// line goes into every system prompt and skill_read loads the rest, unless
// Always puts the whole text into the prompt.
type Skill struct {
	Name        string // front matter name, else the file name without .md
	Description string
	Path        string // the file it came from
	Body        string // the text after the front matter, trimmed
	Always      bool
}

type skillFront struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Always      bool   `yaml:"always"`
}

// Skills returns the skills of the home and of the agent's folder, sorted by
// name; the agent's skill replaces the home's of the same name. On error the
// skills that loaded are still returned, and the error names every file
// that did not.
func Skills(homeDir, agentDir string) ([]Skill, error) {
	return loadAll(homeDir, agentDir, "skills", parseSkill, func(s Skill) string { return s.Name })
}

func parseSkill(path string, data []byte) (Skill, error) {
	var f skillFront
	body, err := parseFrontMatter(path, data, &f)
	if err != nil {
		return Skill{}, err
	}
	name := strings.TrimSpace(f.Name)
	if name == "" {
		name = baseName(path)
	}
	return Skill{Name: name, Description: oneLine(f.Description), Path: path, Body: body, Always: f.Always}, nil
}

// SkillsSection is the system prompt's skills section: an index of the
// skills to load with skill_read, then the full text of the always-on
// skills. It is "" when there are none, and the same skills always give
// the same bytes.
func SkillsSection(skills []Skill) string {
	skills = slices.SortedStableFunc(slices.Values(skills), func(a, b Skill) int { return cmp.Compare(a.Name, b.Name) })
	var index, always []string
	for _, s := range skills {
		desc := oneLine(s.Description)
		switch {
		case s.Always && s.Body != "":
			always = append(always, "## "+s.Name+"\n\n"+s.Body)
		case s.Always: // nothing to say
		case desc != "":
			index = append(index, "- "+s.Name+": "+desc)
		default:
			index = append(index, "- "+s.Name)
		}
	}
	if len(index) == 0 && len(always) == 0 {
		return ""
	}
	parts := []string{"# Skills"}
	if len(index) > 0 {
		parts = append(parts, "Skills are instructions for particular kinds of work. Before doing work that one of these covers, call skill_read with its name to load its full text, and follow it.\n\n"+strings.Join(index, "\n"))
	}
	parts = append(parts, always...)
	return strings.Join(parts, "\n\n")
}

// skillNames lists skill names for a message.
func skillNames(skills []Skill) string {
	names := make([]string, len(skills))
	for i, s := range skills {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
