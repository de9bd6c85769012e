package kit

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed skill_read.md
var skillReadDescription string

// SkillRead returns the skill_read tool, which loads a skill's full text
// from the home's and the agent's skills (tools.Env HomeDir and AgentDir).
// It only reads, so it is not gated.
func SkillRead() tools.Tool { return skillRead{} }

type skillRead struct{}

func (skillRead) Def() tools.Def {
	return tools.Def{Name: "skill_read", Description: skillReadDescription, Params: json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "The skill's name, as listed in the Skills section."}
  },
  "required": ["name"],
  "additionalProperties": false
}`)}
}

func (skillRead) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	var a struct {
		Name string `json:"name"`
	}
	if msg, ok := decodeArgs("skill_read", args, &a); !ok {
		return failf("%s", msg), nil
	}
	if a.Name == "" {
		return failf("name is required"), nil
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
	return failf("%s", msg), nil
}

// decodeArgs reads a call's JSON arguments into v strictly, as the built-in
// tools do: unknown fields are refused so a model that misspells a
// parameter learns so. Empty or null arguments decode as {}.
func decodeArgs(tool string, args json.RawMessage, v any) (msg string, ok bool) {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Sprintf("invalid arguments for %s: %v", tool, err), false
	}
	if dec.More() {
		return fmt.Sprintf("invalid arguments for %s: trailing data after the JSON object", tool), false
	}
	return "", true
}

// failf returns a failure Result for the model.
func failf(format string, a ...any) tools.Result {
	return tools.Result{Output: fmt.Sprintf(format, a...), IsError: true}
}
