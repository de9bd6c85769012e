package events

// Telegram card events, stored on the bot's scope (Telegram(bot)): which
// chat message carries a copy of an approval's or a question's card, so a
// restarted gateway still edits every copy once it is decided or answered
// elsewhere (R-X-3: a stale card is never actionable).
const (
	TypeTelegramCardSent    = "telegram_card_sent"
	TypeTelegramCardSettled = "telegram_card_settled"
)

func init() {
	register[TelegramCardSent]()
	register[TelegramCardSettled]()
}

// Card kinds.
const (
	CardApproval = "approval"
	CardQuestion = "question"
)

// TelegramCardSent records one copy of a card sent to a chat.
type TelegramCardSent struct {
	CardID    string `json:"card_id"` // the approval or question id
	Kind      string `json:"kind"`
	ChatID    int64  `json:"chat_id"`
	MessageID int64  `json:"message_id"`
	Text      string `json:"text"`
	// Choices are a question's buttons, in order (a press sends its index).
	Choices []string `json:"choices,omitempty"`
}

func (*TelegramCardSent) EventType() string { return TypeTelegramCardSent }
func (*TelegramCardSent) EventVersion() int { return 1 }

// TelegramCardSettled: every copy of the card was edited to its outcome
// (approved, denied, answered, expired), its buttons removed.
type TelegramCardSettled struct {
	CardID  string `json:"card_id"`
	Outcome string `json:"outcome"`
}

func (*TelegramCardSettled) EventType() string { return TypeTelegramCardSettled }
func (*TelegramCardSettled) EventVersion() int { return 1 }
