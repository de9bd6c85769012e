// Package inbound is the one door for the owner's messages (R-IN, seed 000
// §2.2): web, Telegram and /api/inbound all come through Receive. It finds
// or opens the conversation, stores the message before answering, and
// leaves running turns to the worker.
package inbound

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Errors, each mapped to one HTTP status by the web gateway.
var (
	ErrAwaitingApproval    = errors.New("the conversation is waiting for an approval: decide it first")                     // 409
	ErrAwaitingAnswer      = errors.New("the conversation is waiting for your answer to its question")                      // 409
	ErrQueueFull           = errors.New("too many queued messages: wait for the running turn")                              // 429
	ErrEmptySteer          = errors.New("/steer needs text: /steer <what to change>")                                       // 422
	ErrUnknownConversation = errors.New("no such conversation")                                                             // 404
	ErrUnknownAgent        = errors.New("no such agent")                                                                    // 404
	ErrBadMessage          = errors.New("bad message")                                                                      // 400
	ErrClosed              = errors.New("the conversation is closed: send without conversation_id to open today's")         // 409
	ErrDelegated           = errors.New("a delegated conversation takes no messages: its brief came from another agent")    // 409
	ErrParked              = errors.New("the conversation is parked: this version of crew cannot read an event of its log") // 409
	ErrBadAttachment       = errors.New("attachment refused")                                                               // 422
	// ErrStoreFull and ErrStoreBusy: the store refused the message or
	// did not take it in time; it was not acknowledged, so the sender
	// sends it again after a while (503 with Retry-After).
	ErrStoreFull = errors.New("not stored: the event store is full (its disk or its limits); send it again once there is room") // 503
	ErrStoreBusy = errors.New("not stored: the event store is too busy to take it now; send it again in a moment")              // 503
)

// RetryAfter is how long a sender waits before sending again a message
// refused with err (ErrStoreFull, ErrStoreBusy); 0 for any other error.
func RetryAfter(err error) time.Duration {
	switch {
	case errors.Is(err, ErrStoreFull):
		return 60 * time.Second
	case errors.Is(err, ErrStoreBusy):
		return 5 * time.Second
	}
	return 0
}

// storeRefusal names the store's refusal or silence as ErrStoreFull or
// ErrStoreBusy, keeping what the store said.
func storeRefusal(err error) error {
	switch {
	case errors.Is(err, events.ErrStoreFull):
		return fmt.Errorf("%w (%v)", ErrStoreFull, err)
	case errors.Is(err, events.ErrStoreUnavailable):
		return fmt.Errorf("%w (%v)", ErrStoreBusy, err)
	}
	return err
}

// MaxAttachments bounds the attachments of one message.
const MaxAttachments = 16

// MaxQueued is how many items a conversation holds waiting (R-HOME-6):
// unanswered messages and steers not yet taken in, together.
const MaxQueued = 20

// Inbound receives messages.
type Inbound struct {
	Convs *loop.Convs
	// Kick runs the conversation's pass once a message is stored (the
	// worker).
	Kick   loop.Kicker
	Master string // the master agent's id
	// Crew is the agents messages go to: a new conversation of an agent
	// keeps its autonomy and its channel's approval lifetime, and its
	// attachments must be in its workspace (none without one).
	Crew loop.Crew
	// Clock is the time and the owner's zone, which name the day's
	// conversation; nil: the wall clock in UTC.
	Clock loop.Clock
	// Home is the home whose kit commands ("/tongket …", with the
	// agent's own) a message may invoke: one sent while a turn runs is
	// taken in at the next tool boundary, as /steer is (R-IN-3); "": the
	// agent's own only.
	Home string
}

// now is the time in the owner's zone.
func (in *Inbound) now() time.Time {
	c := in.Clock
	if c == nil {
		c = loop.WallClock{}
	}
	if loc := c.Location(); loc != nil {
		return c.Now().In(loc)
	}
	return c.Now().UTC()
}

// kitCommand says whether text invokes one of agent's kit commands. A
// commands file that does not load is named where the turn reads them.
func (in *Inbound) kitCommand(agent, text string) bool {
	if in.Crew == nil || !strings.HasPrefix(strings.TrimSpace(text), "/") {
		return false
	}
	a, ok := in.Crew.Agent(agent)
	if !ok {
		return false
	}
	cmds, _ := kit.Commands(in.Home, a.Dir)
	_, _, ok = kit.Expand(cmds, text)
	return ok
}

// Message is one inbound message.
type Message struct {
	Text           string
	Channel        string // "web", "api", "telegram:<chat>"
	Agent          string // default: the master
	ConversationID string // default: the agent's conversation of the channel and day
	From           string
	Attachments    []string
	// Uploads are images sent with the message (the web composer): they
	// are stored under the agent's workspace/inbox/ before the message,
	// which names them after Attachments.
	Uploads []Upload
	// ExternalID names the message in its channel (telegram:<update_id>):
	// a message already stored under it is accepted again without storing.
	ExternalID string
}

// Accepted says where a stored message went.
type Accepted struct {
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	Steer          bool   `json:"steer,omitempty"`
	// Queued counts the messages waiting behind the running turn, this
	// one included; 0 when no turn runs (the message is taken at once).
	Queued int `json:"queued,omitempty"`
	// Seq is the stream sequence of the stored message (0 when it was a
	// repeat of one stored before): who follows the conversation for its
	// answer starts there, not at the conversation's first event.
	Seq uint64 `json:"-"`
}

var channelPattern = regexp.MustCompile(`^[a-z]+(:[A-Za-z0-9_-]{1,64})?$`)

// Receive stores m and returns once it is in the log (R-REL-1).
func (in *Inbound) Receive(ctx context.Context, m Message) (Accepted, error) {
	if m.Channel == "" {
		m.Channel = "api"
	}
	if !channelPattern.MatchString(m.Channel) {
		return Accepted{}, fmt.Errorf("%w: channel %q: want a word, optionally :id (web, api, telegram:42)", ErrBadMessage, m.Channel)
	}
	text := strings.TrimSpace(m.Text)
	if err := checkUploads(m.Uploads, len(m.Attachments)); err != nil {
		return Accepted{}, err
	}
	if text == "" && len(m.Attachments) == 0 && len(m.Uploads) == 0 {
		return Accepted{}, fmt.Errorf("%w: empty text", ErrBadMessage)
	}
	if len(m.Attachments) > MaxAttachments {
		return Accepted{}, fmt.Errorf("%w: %d attachments, at most %d", ErrBadAttachment, len(m.Attachments), MaxAttachments)
	}
	steer, isSteer := cutSteer(text)
	if isSteer && steer == "" {
		return Accepted{}, ErrEmptySteer
	}
	if isSteer && len(m.Uploads) > 0 {
		return Accepted{}, fmt.Errorf("%w: a /steer takes no images: send the image as a message of its own", ErrBadMessage)
	}
	agent := m.Agent
	if agent == "" {
		agent = in.Master
	}
	if _, ok := in.Crew.Agent(agent); !ok {
		return Accepted{}, fmt.Errorf("%w: %q", ErrUnknownAgent, agent)
	}
	id := m.ConversationID
	opening := id == ""
	if len(m.Uploads) > 0 {
		owner, err := in.ownerOf(ctx, id, agent)
		if errors.Is(err, events.ErrInvalidID) {
			return Accepted{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
		}
		if err != nil {
			return Accepted{}, err
		}
		saved, err := in.saveUploads(owner, m.Uploads)
		if err != nil {
			return Accepted{}, err
		}
		m.Attachments = append(slices.Clone(m.Attachments), saved...)
		acc, err := in.receive(ctx, m, agent, id, opening, text, steer, isSteer)
		if err != nil || acc.MessageID == "" {
			in.removeUploads(in.workspace(owner), saved)
		}
		return acc, err
	}
	return in.receive(ctx, m, agent, id, opening, text, steer, isSteer)
}

// receive stores the message, opening today's conversation again if it
// closed meanwhile.
func (in *Inbound) receive(ctx context.Context, m Message, agent, id string, opening bool, text, steer string, isSteer bool) (Accepted, error) {
	for attempt := 0; ; attempt++ {
		acc, err := in.store(ctx, m, agent, id, opening, text, steer, isSteer)
		// Closed between finding today's conversation and the append: the
		// day's next one takes it.
		if errors.Is(err, ErrClosed) && opening && attempt == 0 {
			continue
		}
		return acc, err
	}
}

// store appends the message to its conversation (today's when opening).
func (in *Inbound) store(ctx context.Context, m Message, agent, id string, opening bool, text, steer string, isSteer bool) (Accepted, error) {
	var conv *loop.Conv
	var err error
	if opening {
		conv, err = in.today(ctx, DailyID(agent, in.Master, m.Channel, in.now()))
	} else {
		conv, err = in.Convs.Get(ctx, id)
	}
	if err != nil {
		if errors.Is(err, events.ErrInvalidID) {
			return Accepted{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
		}
		if de := (*events.DecodeError)(nil); errors.As(err, &de) {
			return Accepted{}, fmt.Errorf("%w (%s, sequence %d): upgrade crew, or send without conversation_id", ErrParked, de.Subject, de.Seq)
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// The conversation could not be read in time: nothing stored.
			return Accepted{}, fmt.Errorf("%w (%v)", ErrStoreBusy, err)
		}
		return Accepted{}, err
	}
	id = conv.ID()
	var acc Accepted
	stored, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if prev, seen := st.External[m.ExternalID]; m.ExternalID != "" && seen {
			acc.MessageID = prev
			return nil, nil
		}
		var evs []events.Event
		if opening && st.Agent != "" && (st.Agent != agent || st.Channel != m.Channel) {
			return nil, fmt.Errorf("%w: channel %q of agent %s names the conversation %s of agent %s on %q; use another channel name", ErrBadMessage, m.Channel, agent, id, st.Agent, st.Channel)
		}
		if st.Agent == "" {
			if !opening {
				return nil, fmt.Errorf("%w: %s", ErrUnknownConversation, id)
			}
			a, _ := in.Crew.Agent(agent)
			evs = append(evs, &events.ConversationOpened{
				Agent: agent, Channel: m.Channel, Day: in.now().Format(time.DateOnly),
				Autonomous: a.Autonomous, ApprovalTTLSeconds: int(a.ChannelApprovalTTL(m.Channel) / time.Second),
			})
		}
		if st.Closed {
			return nil, ErrClosed
		}
		owner := st.Agent
		if owner == "" {
			owner = agent
		}
		if err := in.checkAttachments(owner, m.Attachments); err != nil {
			return nil, err
		}
		if st.ParentConversation != "" {
			return nil, fmt.Errorf("%w: talk to %s, which delegated it", ErrDelegated, st.ParentConversation)
		}
		if st.PendingApproval() != nil {
			return nil, ErrAwaitingApproval
		}
		if q := st.PendingQuestion(); q != nil {
			return nil, fmt.Errorf("%w %s (%q): answer it with POST /api/questions/%s, its buttons or a reply to it", ErrAwaitingAnswer, q.ID, q.Text, q.ID)
		}
		// A steer waits as a message does (a run that ends before its next
		// tool boundary leaves it queued): both count against one limit.
		if len(st.Queued)+len(st.Steers) >= MaxQueued {
			return nil, ErrQueueFull
		}
		if isSteer && st.OpenRun != "" {
			acc.Steer = true
			return append(evs, &events.SteerReceived{Channel: m.Channel, Text: steer, ExternalID: m.ExternalID}), nil
		}
		if !isSteer && st.OpenRun != "" && len(m.Attachments) == 0 && in.kitCommand(owner, text) {
			acc.Steer = true
			return append(evs, &events.SteerReceived{Channel: m.Channel, Text: text, ExternalID: m.ExternalID}), nil
		}
		if isSteer {
			// Nothing is running to steer: the words are an ordinary message.
			text = steer
		}
		acc.Queued = 0
		if st.OpenRun != "" {
			acc.Queued = len(st.Queued) + 1
		}
		return append(evs, &events.MessageReceived{Channel: m.Channel, From: m.From, Text: text, Attachments: m.Attachments, ExternalID: m.ExternalID}), nil
	})
	if de := (*events.DecodeError)(nil); errors.As(err, &de) {
		return Accepted{}, fmt.Errorf("%w (%s, sequence %d): upgrade crew, or send without conversation_id", ErrParked, de.Subject, de.Seq)
	}
	if err != nil {
		return Accepted{}, storeRefusal(err)
	}
	acc.ConversationID = id
	if len(stored) > 0 {
		acc.MessageID, acc.Seq = stored[len(stored)-1].ID, stored[len(stored)-1].Seq
	}
	// A steer kicks too: if the run ends before a tool boundary, the steer
	// becomes a message that the next turn answers.
	in.Kick.Kick(id)
	return acc, nil
}

// checkAttachments refuses any attachment that is not an existing regular
// file inside the agent's workspace, named relative to it: no absolute
// path, no "..", no symlink leading out (os.Root resolves links and
// refuses an escape).
func (in *Inbound) checkAttachments(agent string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	ws := in.workspace(agent)
	if ws == "" {
		return fmt.Errorf("%w: %q: this server takes no attachments for agent %s", ErrBadAttachment, paths[0], agent)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("%w: the workspace of %s: %v", ErrBadAttachment, agent, err)
	}
	defer root.Close()
	for _, p := range paths {
		refuse := func(why string) error {
			return fmt.Errorf("%w: %q: %s", ErrBadAttachment, p, why)
		}
		switch {
		case p == "" || strings.ContainsRune(p, 0):
			return refuse("empty or not a path")
		case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
			return refuse("an absolute path: want one relative to the workspace")
		case slices.Contains(strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
			return refuse(`".." leaves the workspace`)
		case !filepath.IsLocal(p):
			return refuse("not a path inside the workspace")
		}
		fi, err := root.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return refuse("no such file in the workspace")
		case err != nil:
			return refuse("outside the workspace (a symlink leading out?) or unreadable")
		case !fi.Mode().IsRegular():
			return refuse("not a regular file")
		}
	}
	return nil
}

// Current is the id of the conversation a message from agent's channel
// (agent "": the master, as in a Message) without conversation_id would
// go to now.
func (in *Inbound) Current(ctx context.Context, agent, channel string) (string, error) {
	if agent == "" {
		agent = in.Master
	}
	conv, err := in.today(ctx, DailyID(agent, in.Master, channel, in.now()))
	if err != nil {
		return "", err
	}
	return conv.ID(), nil
}

// today returns the conversation a message without conversation_id goes
// to: the day's conversation on its channel, or, once the owner closed
// that one, the next of the day ("web-20261130-2", ...).
func (in *Inbound) today(ctx context.Context, daily string) (*loop.Conv, error) {
	id := daily
	for n := 2; ; n++ {
		conv, err := in.Convs.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		closed := false
		conv.View(func(st *loop.State) { closed = st.Closed })
		if !closed || n > maxPerDay {
			return conv, nil
		}
		id = fmt.Sprintf("%s-%d", daily, n)
	}
}

// maxPerDay bounds the conversations of one channel and day: past it, the
// last one stays closed and says so.
const maxPerDay = 100

// workspace is the folder agent's attachments must be in; "": none.
func (in *Inbound) workspace(agent string) string {
	a, _ := in.Crew.Agent(agent)
	return a.Workspace
}

// cutSteer recognises "/steer <text>".
func cutSteer(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/steer")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// DailyID is the id of an agent's conversation on a channel for a day (in
// the owner's time zone): "web-20261130", "telegram-42-20261130" for the
// master, "coach-web-20261130" for another agent.
func DailyID(agent, master, channel string, day time.Time) string {
	id := strings.ReplaceAll(channel, ":", "-") + "-" + day.Format("20060102")
	if agent != master {
		id = agent + "-" + id
	}
	return id
}
