package kit

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed skill_read.md
var skillReadDescription string

// SkillRead returns the skill_read tool, which loads a skill's full text
// from the home's and the agent's skills (tools.Env HomeDir and AgentDir).
// It only reads, so it is not gated.
func SkillRead() tools.Tool { return tools.NewFunc[skillReadArgs](skillRead{}) }

type skillRead struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (skillRead) ReadOnly() bool { return true }

func (skillRead) Def() tools.Def {
	return tools.Def{Name: "skill_read", Description: skillReadDescription, Default: true}
}

type skillReadArgs struct {
	Name string `json:"name" jsonschema:"The skill's name, as listed in the Skills section."`
}

func (skillRead) Run(ctx context.Context, env tools.Env, a skillReadArgs) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	if a.Name == "" {
		return tools.Failf("name is required"), nil
	}
	// A broken skill file is the owner's to fix; the model can still read
	// the others and tell the owner what is wrong.
	skills, loadErr := Skills(env.HomeDir, env.AgentDir)
	for _, s := range skills {
		if s.Name != a.Name {
			continue
		}
		if s.Body == "" {
			return tools.Result{Output: "The skill " + s.Name + " has no text."}, nil
		}
		return tools.Result{Output: s.Body}, nil
	}
	msg := fmt.Sprintf("there is no skill %q", a.Name)
	if len(skills) == 0 {
		msg += "; no skills are installed"
	} else {
		msg += "; the skills are: " + skillNames(skills)
	}
	if loadErr != nil {
		msg += "\nSome skill files could not be read:\n" + loadErr.Error()
	}
	return tools.Failf("%s", msg), nil
}
