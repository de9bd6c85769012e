package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/my-agent-crew/crew/gateways/mcpserver"
	"github.com/my-agent-crew/crew/gateways/telegram"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// What crew serve adds to the crew: the singletons and the web gateway's
// configuration. A new gateway is a package plus a start line in
// RunSingletons (one process runs it) or a field in Web (every process
// serves it).

// RunSingletons runs what one crew process runs at a time — the
// scheduler with its sweeps, the team runtime's passes and, with
// telegramToken, the Telegram poller — here at once without a cluster, or while this process leads one
// (with the take-over of conversations whose holder died). Close stops
// them.
func (a *App) RunSingletons(ctx context.Context, telegramToken string, out io.Writer) error {
	if telegramToken != "" && a.Home.Agents[home.MasterID] == nil {
		return errors.New("telegram: TELEGRAM_BOT_TOKEN is set but the master agent is not loaded")
	}
	start := func(ctx context.Context) (func(), error) {
		var s cluster.Singletons
		stop, err := a.Scheduler.Start(ctx, a.Crew.Profile())
		if err != nil {
			return nil, err
		}
		s.Add(stop)
		// The team runtime's passes (R-TEAM): one process decides
		// deliveries, reports, claims and shutdowns; the others' tools
		// write to the log, which the leader's follow reads.
		s.Add(a.wiring.Teams.Run(ctx))
		if telegramToken != "" {
			g, err := a.startTelegram(ctx, telegramToken)
			if err != nil {
				s.Stop()
				return nil, err
			}
			s.Add(g.Close)
			fmt.Fprintf(out, "telegram: polling, serving chats %v\n", a.Home.Agents[home.MasterID].Telegram.AllowedChatIDs)
		}
		return s.Stop, nil
	}
	stop, err := a.member.Run(ctx, a.Worker, a.DB(), start)
	if err != nil {
		return err
	}
	a.singletons.Add(stop)
	return nil
}

// startTelegram starts the Telegram gateway for the master agent.
func (a *App) startTelegram(ctx context.Context, token string) (*telegram.Gateway, error) {
	master := a.Home.Agents[home.MasterID]
	return telegram.Start(ctx, telegram.Config{
		Token: token, APIURL: a.Home.Config.Telegram.APIURL, AllowedChatIDs: master.Telegram.AllowedChatIDs,
		Workspace: filepath.Join(master.Dir, "workspace"), Log: a.Log(), DB: a.DB(), Inbound: a.Inbound, Approvals: a.Approvals,
		Questions: a.Questions, Stops: a.Stops, Conversations: a.Summaries, Fresh: a.freshness(),
		Logger: a.log.With("component", "telegram"), Home: a.Dir, Artifact: a.Canvas.File, Checkpoint: a.opts.TelegramCheckpoint,
	})
}

// Web is the web gateway's configuration: the crew's store and parts,
// and its doors, on top of what serve decides itself in base (the token,
// the hosts, the audit key).
func (a *App) Web(base web.Config) web.Config {
	c := base.On(web.Store{Log: a.Log(), DB: a.DB(), Fresh: a.freshness(), Convs: a.Convs, Home: a.Dir, Spills: a.Deps.Services.Spills,
		Location: a.Home.Config.Location(), Sessions: a.sessions, Live: events.LiveFeed(a.Conn()), Search: a.recall.Index()},
		web.Running{Crew: loop.CrewView{Crew: a.Crew}, Banner: llm.Banner(a.Override, a.Home.Lookup(a.opts.Getenv)), Memory: a.Memory,
			Budget: func() any { return a.Ledger.Today() }, Canvas: a.Canvas, Doors: a.Doors})
	c.Jobs = a.jobs
	c.Conversations = a.Summaries
	c.Health = a.Health
	c.CatchingUp = a.CatchingUp
	c.Teams = a.Teams
	c.Forks = a.Forker()
	c.MCP = a.pool.States
	if token, err := a.Home.MCPToken(a.opts.Getenv, true); err != nil {
		a.log.Warn("/mcp left out: no bearer token", "err", err)
	} else {
		a.opts.Secrets.Add(home.AuthTokenVar, token)
		c.MCPEndpoint = mcpserver.Handler(mcpserver.Config{Log: a.Log(), DB: a.DB(), Convs: a.Convs, Inbound: a.Inbound, Stops: a.Stops, Fresh: a.Runner, Home: a.Dir,
			Version: home.CrewVersion(), Logger: a.log.With("component", "mcpserver")}, token)
	}
	if c.Logger == nil {
		c.Logger = a.log.With("component", "web")
	}
	return c
}

// Describe is what serve prints about the log (cluster.Describe).
func (a *App) Describe(ctx context.Context) string {
	return cluster.Describe(ctx, a.store, a.Home.Config.NATS.URL)
}
