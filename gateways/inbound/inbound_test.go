package inbound_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
)

// clockAt is the wall clock of a zone stopped at one time.
type clockAt struct {
	loop.WallClock
	at time.Time
}

func (c clockAt) Now() time.Time { return c.at }

func newInbound(t *testing.T) (*inbound.Inbound, *loop.Convs, *[]string) {
	t.Helper()
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	var kicked []string
	loc, _ := time.LoadLocation("Asia/Ho_Chi_Minh")
	in := &inbound.Inbound{
		Convs: convs, Kick: loop.KickFunc(func(id string) { kicked = append(kicked, id) }), Master: "master",
		Crew: loop.Agents{"master": {ID: "master"}, "coach": {ID: "coach"}},
		// 23:30 UTC on the 30th is already the 1st of December in Hanoi.
		Clock: clockAt{loop.WallClock{Zone: loc}, time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)},
	}
	return in, convs, &kicked
}

// R-IN-1: one conversation per agent, channel and day in the owner's time
// zone.
func TestInboundConversationPerChannelPerDayInOwnersTimezone(t *testing.T) {
	in, _, kicked := newInbound(t)
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "web"})
	if err != nil || a.ConversationID != "web-20261201" {
		t.Fatalf("accepted = %+v, %v; want web-20261201", a, err)
	}
	b, _ := in.Receive(ctx, inbound.Message{Text: "again", Channel: "web"})
	c, _ := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "telegram:42"})
	d, _ := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "web", Agent: "coach"})
	if b.ConversationID != a.ConversationID || c.ConversationID != "telegram-42-20261201" || d.ConversationID != "coach-web-20261201" {
		t.Errorf("ids: %s %s %s", b.ConversationID, c.ConversationID, d.ConversationID)
	}
	if len(*kicked) != 4 {
		t.Errorf("kicked %d times, want 4", len(*kicked))
	}
}

func TestInboundRefusals(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	cases := []struct {
		m    inbound.Message
		want error
	}{
		{inbound.Message{Text: "/steer"}, inbound.ErrEmptySteer},
		{inbound.Message{Text: "/steer   "}, inbound.ErrEmptySteer},
		{inbound.Message{Text: "  "}, inbound.ErrBadMessage},
		{inbound.Message{Text: "x", Channel: "Web!"}, inbound.ErrBadMessage},
		{inbound.Message{Text: "x", Agent: "nobody"}, inbound.ErrUnknownAgent},
		{inbound.Message{Text: "x", ConversationID: "nope"}, inbound.ErrUnknownConversation},
		{inbound.Message{Text: "x", ConversationID: "../etc"}, inbound.ErrBadMessage},
	}
	for _, c := range cases {
		if _, err := in.Receive(ctx, c.m); !errors.Is(err, c.want) {
			t.Errorf("Receive(%+v) = %v, want %v", c.m, err, c.want)
		}
	}
	// Nothing was stored by a refusal.
	conv, _ := convs.Get(ctx, "nope")
	conv.View(func(st *loop.State) {
		if st.Seq != 0 {
			t.Errorf("a refused message was stored")
		}
	})
}

// R-IN-4: only a conversation waiting on an approval refuses (409).
func TestInboundRefusesWhileApprovalPending(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	a, _ := in.Receive(ctx, inbound.Message{Text: "write it", Channel: "web"})
	conv, _ := convs.Get(ctx, a.ConversationID)
	conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{
			&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
			&events.ApprovalRequested{ApprovalID: "a1", RunID: "r1", Step: 1, CallID: "c1", Tool: "workspace_write", ExpiresAt: time.Now().Add(time.Hour)},
		}, nil
	})
	for _, text := range []string{"hello?", "/steer stop"} {
		if _, err := in.Receive(ctx, inbound.Message{Text: text, Channel: "web"}); !errors.Is(err, inbound.ErrAwaitingApproval) {
			t.Errorf("%q while awaiting approval: %v, want ErrAwaitingApproval", text, err)
		}
	}
	// A decision takes the conversation at once: the next message queues.
	conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved}}, nil
	})
	if _, err := in.Receive(ctx, inbound.Message{Text: "and then?", Channel: "web"}); err != nil {
		t.Errorf("after the decision: %v", err)
	}
}

// R-IN-3: /steer goes to the running turn; with none running it is a
// message. R-HOME-6: the 21st queued message gets 429.
func TestInboundSteerAndQueueLimit(t *testing.T) {
	in, convs, kicked := newInbound(t)
	ctx := t.Context()
	a, _ := in.Receive(ctx, inbound.Message{Text: "/steer use km", Channel: "web"})
	if a.Steer {
		t.Errorf("a steer with no turn running was taken as a steer")
	}
	conv, _ := convs.Get(ctx, a.ConversationID)
	conv.View(func(st *loop.State) {
		if len(st.Queued) != 1 || st.Queued[0].Text != "use km" {
			t.Errorf("queued = %+v", st.Queued)
		}
	})
	conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"}}, nil
	})
	s, err := in.Receive(ctx, inbound.Message{Text: "/steer shorter please", Channel: "web"})
	if err != nil || !s.Steer {
		t.Errorf("steer while running: %+v, %v", s, err)
	}
	conv.View(func(st *loop.State) {
		if len(st.Steers) != 1 || st.Steers[0].Text != "shorter please" {
			t.Errorf("steers = %+v", st.Steers)
		}
	})
	_ = kicked
	// The waiting steer counts against the limit (issue 10 item 13).
	for i := range inbound.MaxQueued - 1 {
		if _, err := in.Receive(ctx, inbound.Message{Text: "more", Channel: "web"}); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	if _, err := in.Receive(ctx, inbound.Message{Text: "one too many", Channel: "web"}); !errors.Is(err, inbound.ErrQueueFull) {
		t.Errorf("21st queued message: %v, want ErrQueueFull", err)
	}
}

// Issue 10 item 13: steers count against the same 20 waiting items as
// queued messages; the 21st, steer or message, is refused and nothing is
// stored.
func TestSteersCountAgainstQueueLimit(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "start", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := convs.Get(ctx, a.ConversationID)
	conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"}}, nil
	})
	for i := range inbound.MaxQueued / 2 {
		if _, err := in.Receive(ctx, inbound.Message{Text: "more", Channel: "web"}); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	for i := range inbound.MaxQueued / 2 {
		if s, err := in.Receive(ctx, inbound.Message{Text: "/steer this way", Channel: "web"}); err != nil || !s.Steer {
			t.Fatalf("steer %d: %+v %v", i+1, s, err)
		}
	}
	var before uint64
	conv.View(func(st *loop.State) { before = st.Seq })
	for _, text := range []string{"/steer one too many", "one too many"} {
		if _, err := in.Receive(ctx, inbound.Message{Text: text, Channel: "web"}); !errors.Is(err, inbound.ErrQueueFull) {
			t.Errorf("%q with %d waiting: %v, want ErrQueueFull", text, inbound.MaxQueued, err)
		}
	}
	conv.View(func(st *loop.State) {
		if st.Seq != before || len(st.Steers)+len(st.Queued) != inbound.MaxQueued {
			t.Errorf("refused items were stored: seq %d→%d, %d steers, %d queued", before, st.Seq, len(st.Steers), len(st.Queued))
		}
	})
	// Steers alone: the 21st is refused as well.
	in2, convs2, _ := newInbound(t)
	b, _ := in2.Receive(ctx, inbound.Message{Text: "start", Channel: "web"})
	conv2, _ := convs2.Get(ctx, b.ConversationID)
	conv2.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"}}, nil
	})
	for i := range inbound.MaxQueued {
		if _, err := in2.Receive(ctx, inbound.Message{Text: "/steer again", Channel: "web"}); err != nil {
			t.Fatalf("steer %d: %v", i+1, err)
		}
	}
	if _, err := in2.Receive(ctx, inbound.Message{Text: "/steer again", Channel: "web"}); !errors.Is(err, inbound.ErrQueueFull) {
		t.Errorf("21st steer: %v, want ErrQueueFull", err)
	}
}

// R-TG / R-REL-1: a channel message redelivered after a crash (same
// external id) is accepted again but stored once.
func TestInboundExternalIDIsStoredOnce(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "telegram:42", ExternalID: "telegram:1001"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "telegram:42", ExternalID: "telegram:1001"})
	if err != nil || b.MessageID != a.MessageID {
		t.Fatalf("redelivery = %+v, %v; want the first message's id %s", b, err, a.MessageID)
	}
	conv, _ := convs.Get(ctx, a.ConversationID)
	conv.View(func(st *loop.State) {
		if len(st.Queued) != 1 {
			t.Errorf("stored %d messages, want 1", len(st.Queued))
		}
	})
}

// A conversation the owner closed stays closed; the next message without a
// conversation id opens the day's next one, which its turn notes then tell
// the closed one's summary (R-CTX-2).
func TestInboundAfterCloseOpensTheDaysNextConversation(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "hi", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := convs.Get(ctx, a.ConversationID)
	if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationClosed{Reason: "owner"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Receive(ctx, inbound.Message{Text: "late", ConversationID: a.ConversationID}); !errors.Is(err, inbound.ErrClosed) {
		t.Errorf("message into the closed conversation = %v, want ErrClosed", err)
	}
	b, err := in.Receive(ctx, inbound.Message{Text: "fresh start", Channel: "web"})
	if err != nil || b.ConversationID != "web-20261201-2" {
		t.Fatalf("next = %+v, %v; want web-20261201-2", b, err)
	}
	c, _ := in.Receive(ctx, inbound.Message{Text: "again", Channel: "web"})
	if c.ConversationID != b.ConversationID {
		t.Errorf("then %s, want %s", c.ConversationID, b.ConversationID)
	}
}

// R-DEL: a delegated child sees only its brief; the owner cannot post into
// it (its answer goes to the parent, which would never read a second run).
func TestInboundRefusesDelegatedConversation(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	conv, _ := convs.Get(ctx, "web-20261201-d-abc")
	if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "coach", Channel: "delegate", RootID: "web-20261201", ParentConversation: "web-20261201", Autonomous: true}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Receive(ctx, inbound.Message{Text: "psst", ConversationID: "web-20261201-d-abc"}); !errors.Is(err, inbound.ErrDelegated) {
		t.Errorf("message into a delegated conversation = %v, want ErrDelegated", err)
	}
}

// TestInboundQueuedCountWhileRunning (issue 10 item 8): a message stored
// while a turn runs is answered with how many wait, itself included; with
// no turn running the answer says nothing is queued.
func TestInboundQueuedCountWhileRunning(t *testing.T) {
	in, convs, _ := newInbound(t)
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "first", Channel: "web"})
	if err != nil || a.Queued != 0 {
		t.Fatalf("with no turn running: %+v, %v; want queued 0", a, err)
	}
	conv, _ := convs.Get(ctx, a.ConversationID)
	conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"}}, nil
	})
	for want := 1; want <= 2; want++ {
		b, err := in.Receive(ctx, inbound.Message{Text: "more", Channel: "web"})
		if err != nil || b.Queued != want {
			t.Errorf("message %d behind the turn: %+v, %v; want queued %d", want, b, err, want)
		}
	}
	if s, err := in.Receive(ctx, inbound.Message{Text: "/steer faster", Channel: "web"}); err != nil || !s.Steer || s.Queued != 0 {
		t.Errorf("a steer: %+v, %v; want a steer, not a queued message", s, err)
	}
}

// Issue 10 item 7: a message to a conversation whose log cannot be
// decoded is refused with ErrParked naming the event, not a bare failure.
func TestInboundRefusesParkedConversation(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	newDoor := func() *inbound.Inbound {
		return &inbound.Inbound{Convs: loop.NewConvs(log, nil), Kick: loop.KickFunc(func(string) {}), Master: "master",
			Crew: loop.Agents{"master": {ID: "master"}}, Clock: clockAt{loop.WallClock{Zone: time.UTC}, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}}
	}
	a, err := newDoor().Receive(ctx, inbound.Message{Text: "hi", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	subject := events.Conv(a.ConversationID).Subject(events.TypeRunStarted)
	ack, err := log.JetStream().Publish(ctx, subject, []byte(`{"type":"run_started","v":9,"id":"f1","time":"2026-11-30T09:00:00Z","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh process reads the conversation from the log.
	for _, m := range []inbound.Message{{Text: "again", Channel: "web", ConversationID: a.ConversationID}, {Text: "today's", Channel: "web"}} {
		_, err = newDoor().Receive(ctx, m)
		if !errors.Is(err, inbound.ErrParked) || !strings.Contains(err.Error(), subject) {
			t.Errorf("Receive(%+v) on a parked conversation = %v, want ErrParked naming %s", m, err, subject)
		}
	}
	if last, _ := log.Last(ctx, events.Conv(a.ConversationID).Filter()); last != ack.Sequence {
		t.Errorf("something was stored after the undecodable event")
	}
}

// A new conversation keeps what its agent is in the crew: its autonomy,
// and on Telegram the approval lifetime the agent sets for Telegram (no
// other channel stores one: the agent's own holds, as reloaded).
func TestInboundNewConversationKeepsItsAgentsAutonomyAndChannelTTL(t *testing.T) {
	in, convs, _ := newInbound(t)
	in.Crew = loop.Agents{"master": {ID: "master", Autonomous: true, ApprovalTTL: time.Minute, TelegramApprovalTTL: time.Hour}}
	ctx := t.Context()
	for ch, want := range map[string]int{"telegram:42": 3600, "web": 0} {
		a, err := in.Receive(ctx, inbound.Message{Text: "hi", Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		conv, err := convs.Get(ctx, a.ConversationID)
		if err != nil {
			t.Fatal(err)
		}
		conv.View(func(st *loop.State) {
			if !st.Autonomous || st.ApprovalTTL != want {
				t.Errorf("%s: autonomous %v, approval ttl %d s; want true, %d", ch, st.Autonomous, st.ApprovalTTL, want)
			}
		})
	}
}

// Accepted carries the stored message's stream sequence, so a caller
// waiting for the answer (the crew's MCP server) follows the conversation
// from there, not from its first event.
func TestAcceptedCarriesTheStoredMessagesSequence(t *testing.T) {
	_, log := eventstest.Start(t)
	in := &inbound.Inbound{Convs: loop.NewConvs(log, nil), Kick: loop.KickFunc(func(string) {}), Master: "master", Crew: loop.Agents{"master": {ID: "master"}},
		Clock: loop.WallClock{Zone: time.UTC}}
	ctx := t.Context()
	a, err := in.Receive(ctx, inbound.Message{Text: "first", Channel: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.Receive(ctx, inbound.Message{Text: "second", Channel: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Seq == 0 || b.Seq <= a.Seq {
		t.Fatalf("sequences %d then %d", a.Seq, b.Seq)
	}
	for env, err := range log.Read(ctx, events.Conv(b.ConversationID).Filter(), b.Seq) {
		if err != nil || env.ID != b.MessageID || env.Type != events.TypeMessageReceived {
			t.Fatalf("the event at sequence %d is %s %s (%v), want message %s", b.Seq, env.Type, env.ID, err, b.MessageID)
		}
		break
	}
}
