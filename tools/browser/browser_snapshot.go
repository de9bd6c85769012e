package browser

import (
	"context"
	_ "embed"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed browser_snapshot.md
var snapshotDescription string

// Snapshot returns the current tab's outline with fresh refs.
type Snapshot struct{ base }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Snapshot) ReadOnly() bool { return true }

func (Snapshot) Def() tools.Def {
	return tools.Def{Name: "browser_snapshot", Description: snapshotDescription + "\n" + fence.Rule}
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

func (s Snapshot) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	return s.run(ctx, env, "browser_snapshot", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_snapshot: %v", err), nil
		}
		return pageResult(ctx, in, env, t, "", true)
	})
}
