package events

// The Telegram outbox (R-TG), stored on the bot's scope (Telegram(bot)):
// every message the gateway sends — a run's reply, a notice, a card, a
// card's edit, a canvas file — is wanted first, then recorded sent (or
// failed, when the chat is gone), so a restarted gateway sends what is
// wanted and not yet sent, in order per chat.
const (
	TypeTelegramSendWanted     = "telegram_send_wanted"
	TypeTelegramSent           = "telegram_sent"
	TypeTelegramSendFailed     = "telegram_send_failed"
	TypeTelegramOutboxPosition = "telegram_outbox_position"
)

func init() {
	register[TelegramSendWanted]()
	register[TelegramSent]()
	register[TelegramSendFailed]()
	register[TelegramOutboxPosition]()
}

// Outbox kinds: what a wanted message is.
const (
	SendReply  = "reply"  // a run's answer (one part of it: parts are wanted one by one)
	SendNotice = "notice" // the gateway's own line: an acknowledgement, a command's answer, an error
	SendCard   = "card"   // an approval's or a question's card, with its buttons
	SendEdit   = "edit"   // a card's copy edited to its outcome, its buttons removed
	SendFile   = "file"   // a canvas sent as a photo or a document
)

// TelegramSendWanted is one message the gateway must send to Chat.
type TelegramSendWanted struct {
	Chat int64  `json:"chat"`
	Kind string `json:"kind"`
	// Ref names what the message answers, unique per chat and kind: a
	// conversation event ("conv:<seq>", "#<n>" for its n-th part), an
	// update ("update:<id>") or a button press ("callback:<id>").
	Ref string `json:"ref"`
	// SourceSeq is the conversation event's stream sequence, for the
	// messages the follower wants (0 for the poller's notices).
	SourceSeq uint64 `json:"source_seq,omitempty"`
	// Text is a reply's or a notice's text, or an edit's new text ("" for
	// an edit that only removes the buttons).
	Text string            `json:"text,omitempty"`
	Card *TelegramCardWant `json:"card,omitempty"`
	// MessageID is the message an edit changes.
	MessageID int64 `json:"message_id,omitempty"`
	// Artifact is a file's canvas id.
	Artifact string `json:"artifact,omitempty"`
}

// TelegramCardWant is a card to send: its text and buttons.
type TelegramCardWant struct {
	CardID  string   `json:"card_id"`
	Kind    string   `json:"kind"` // CardApproval, CardQuestion
	Text    string   `json:"text"`
	Choices []string `json:"choices,omitempty"`
}

func (*TelegramSendWanted) EventType() string { return TypeTelegramSendWanted }
func (*TelegramSendWanted) EventVersion() int { return 1 }

// TelegramSent: the Bot API accepted the wanted message at WantedSeq.
type TelegramSent struct {
	WantedSeq uint64 `json:"wanted_seq"`
	MessageID int64  `json:"message_id"`
}

func (*TelegramSent) EventType() string { return TypeTelegramSent }
func (*TelegramSent) EventVersion() int { return 1 }

// TelegramSendFailed: the wanted message was given up, because the Bot
// API answered a 4xx retrying cannot mend (ChatGone: the chat is gone —
// the bot was blocked or removed, the chat deleted).
type TelegramSendFailed struct {
	WantedSeq uint64 `json:"wanted_seq"`
	Chat      int64  `json:"chat"`
	Status    int    `json:"status"`
	Error     string `json:"error"`
	ChatGone  bool   `json:"chat_gone,omitempty"`
}

func (*TelegramSendFailed) EventType() string { return TypeTelegramSendFailed }
func (*TelegramSendFailed) EventVersion() int { return 1 }

// TelegramOutboxPosition records the conversation event up to which the
// gateway's follower has wanted everything (Seq), when no wanted message
// says so: at the first start (the log's end then) and at a clean stop.
//
// It is also the outbox's low-water mark, stored at every start and clean
// stop: Settled is the bot-scope sequence from which a start reads the
// outbox (every telegram_send_wanted before it is sent or given up), and
// Cards and Refs are what the events before it still mean: the card
// copies sent and not settled, and the refs wanted lately (so a poller's
// update fetched again wants nothing twice). A start thus reads what came
// after the last mark, not the whole outbox.
type TelegramOutboxPosition struct {
	Seq     uint64             `json:"seq"`
	Settled uint64             `json:"settled,omitempty"`
	Cards   []TelegramOpenCard `json:"cards,omitempty"`
	Refs    []string           `json:"refs,omitempty"`
}

// TelegramOpenCard is one copy of a card sent and not yet settled.
type TelegramOpenCard struct {
	CardID    string   `json:"card_id"`
	Kind      string   `json:"kind"`
	Chat      int64    `json:"chat"`
	MessageID int64    `json:"message_id"`
	Text      string   `json:"text"`
	Choices   []string `json:"choices,omitempty"`
}

func (*TelegramOutboxPosition) EventType() string { return TypeTelegramOutboxPosition }
func (*TelegramOutboxPosition) EventVersion() int { return 1 }
