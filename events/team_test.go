package events_test

import "github.com/my-agent-crew/crew/events"

// Samples of the team events, as the team runtime emits them.
func init() {
	samples[events.TypeTeamConfirmed] = []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Plan: "config, auth and tests in parallel",
		Members: []events.TeamMember{{Name: "alice", Agent: "master", Responsibility: "config"}, {Name: "bob", Agent: "coder", Responsibility: "auth"}}}}
	samples[events.TypeTaskCreated] = []events.Event{&events.TaskCreated{TaskID: "task_1a2b3c4d", Subject: "config", Description: "clean up config loading"},
		&events.TaskCreated{TaskID: "task_1a2b3c4e", Subject: "auth"}}
	samples[events.TypeTaskUpdated] = []events.Event{&events.TaskUpdated{TaskID: "task_1a2b3c4d", AddBlockedBy: []string{"task_1a2b3c4e"}},
		&events.TaskUpdated{TaskID: "task_1a2b3c4d", Status: events.TaskPending}}
	samples[events.TypeTaskClaimed] = []events.Event{&events.TaskClaimed{TaskID: "task_1a2b3c4d", Owner: "alice", How: "claim"}}
	samples[events.TypeTaskReleased] = []events.Event{&events.TaskReleased{TaskID: "task_1a2b3c4d", Owner: "alice", Reason: "lead"}}
	samples[events.TypeTaskCompleted] = []events.Event{&events.TaskCompleted{TaskID: "task_1a2b3c4d", Owner: "alice", Result: "done; tests pass"}}
	samples[events.TypeTaskWorktreeBound] = []events.Event{&events.TaskWorktreeBound{TaskID: "task_1a2b3c4d", Name: "auth-refactor", Path: "/home/w/.worktrees/auth-refactor", Branch: "wt/auth-refactor"}}
	samples[events.TypeTaskWorktreeRemove] = []events.Event{&events.TaskWorktreeRemoved{TaskID: "task_1a2b3c4d", Name: "auth-refactor"},
		&events.TaskWorktreeRemoved{TaskID: "task_1a2b3c4d", Name: "auth-refactor", Discarded: true}}
	samples[events.TypeTeammateSpawned] = []events.Event{&events.TeammateSpawned{Name: "alice", Agent: "master", Conversation: "web-1-t-alice"},
		&events.TeammateSpawned{Name: "bob", Agent: "coder", Conversation: "web-1-t-bob", Responsibility: "auth", RequirePlan: true}}
	samples[events.TypeTeammateStopped] = []events.Event{&events.TeammateStopped{Name: "alice", RequestID: "req_1"}, &events.TeammateStopped{Name: "bob"}}
	samples[events.TypeTeamStopRequested] = []events.Event{&events.TeamStopRequested{By: events.StopByWeb, LeadMessages: 7}, &events.TeamStopRequested{By: events.StopByAPI}}
	samples[events.TypeMailSent] = []events.Event{
		&events.MailSent{From: "lead", To: "alice", Type: events.MailMessage, Content: "start with the loader"},
		&events.MailSent{From: "bob", To: "lead", Type: events.MailResult, Content: "auth refactored", TaskID: "task_1a2b3c4d", Run: "r1"},
		&events.MailSent{From: "bob", To: "lead", Type: events.MailPlanApproval, Content: "1. split", RequestID: "req_2", TaskID: "task_1a2b3c4d", WorkVersion: 1},
		&events.MailSent{From: "lead", To: "bob", Type: events.MailPlanResponse, Content: "go", RequestID: "req_2", Status: events.ProtocolApproved},
	}
	samples[events.TypeMessageReceived] = append(samples[events.TypeMessageReceived], &events.MessageReceived{Channel: "team", From: "team", Text: "bob: result",
		Team: &events.TeamDelivery{Through: 7, Items: []events.TeamItem{{From: "bob", Type: events.MailResult, Content: "auth done", TaskID: "task_1a2b3c4d"}, {From: "bob", Type: events.MailIdle, Content: "Waiting for more work."}}}})
	samples[events.TypeConversationOpened] = append(samples[events.TypeConversationOpened], &events.ConversationOpened{Agent: "master", Channel: "team",
		RootID: "web-1", ParentConversation: "web-1", Autonomous: true, Team: "web-1", Member: "alice"})
}
