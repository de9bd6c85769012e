// Package telegram is the Telegram gateway (R-TG): it long-polls the Bot API
// for the owner's messages and hands them to the inbound door, and it sends
// each finished run's answer, each approval card and each question
// (ask_user: its choices as buttons, answerable by a press or by a reply to
// it) back to the chat. Which message carries which card is stored on
// crew.tg.<bot> (the card's telegram_send_wanted and telegram_sent, and
// telegram_card_settled), so a restarted gateway still edits every copy
// once it is decided or answered elsewhere. While a question waits in a
// chat, the owner's plain message answers it (the latest there).
//
// Delivery guarantees:
//
//   - Inbound is at-least-once into the log and exactly-once in effect: the
//     getUpdates offset is stored on crew.tg.<bot> (TelegramOffsetAdvanced)
//     only after every update before it was stored as a message, so a crash
//     fetches them again, and Receive recognises a stored update by its
//     ExternalID "telegram:<update_id>".
//   - Outbound is at-least-once through an outbox (outbox.go): every
//     message is a telegram_send_wanted before it is sent and a
//     telegram_sent after; the follower resumes where it stopped, so a run
//     that finished while the gateway was down is sent at its start; one
//     worker per chat sends in order, riding out 429, 5xx and network
//     errors, giving up (telegram_send_failed) only on a 4xx that retrying
//     cannot mend. A crash after Telegram accepted a message and before
//     its telegram_sent was stored sends it once more: at most one
//     duplicate, only across a crash in that window.
//   - Replies are plain text (no parse_mode), so Markdown in an answer can
//     never make a send fail; long answers are split at 4096 characters, on
//     line boundaries when possible.
//
// The bot token is never logged or stored: the log scope is named after the
// numeric bot id before the token's ':' (or a hash when there is none), and
// HTTP errors are stripped of the URL that carries the token.
package telegram
