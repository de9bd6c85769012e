package events

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"time"
)

// Recorded reads what a replay of a run of conversation conv reads: the
// conversation's events and its team's (the board, the mailboxes, and a
// teammate's lead's conversation, whose workspace it works in), in stream
// order, since a lead's or a teammate's turn reads the board. crew replay
// on a stopped home and the running server's GET /api/runs/{id}/recorded
// both gather with it, so the two modes replay the same events.
func Recorded(ctx context.Context, log interface {
	Read(ctx context.Context, filter string, from uint64) iter.Seq2[Envelope, error]
}, conv string) ([]Envelope, error) {
	var envs []Envelope
	read := func(filter string) error {
		for env, err := range log.Read(ctx, filter, 0) {
			if err != nil {
				return err
			}
			envs = append(envs, env)
		}
		return nil
	}
	if err := read(Conv(conv).Filter()); err != nil {
		return nil, err
	}
	team := conv
	for _, env := range envs {
		if env.Type == TypeConversationOpened {
			if e, err := env.Decode(); err == nil && e.(*ConversationOpened).Team != "" {
				team = e.(*ConversationOpened).Team
			}
			break
		}
	}
	filters := []string{Team(team).Filter(), MailOf(team)}
	if team != conv {
		filters = append(filters, Conv(team).Filter())
	}
	for _, filter := range filters {
		if err := read(filter); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(envs, func(x, y Envelope) int { return cmp.Compare(x.Seq, y.Seq) })
	return envs, nil
}

// recordedLine is one event of a recorded run on the wire; the last line
// is {"end":{"conversation":…,"events":n}}, so a cut answer is an error.
type recordedLine struct {
	Subject string          `json:"subject,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
	Time    time.Time       `json:"time,omitzero"`
	Type    string          `json:"type,omitempty"`
	V       int             `json:"v,omitempty"`
	ID      string          `json:"id,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	End     *ExportSummary  `json:"end,omitempty"`
}

// WriteRecorded writes what Recorded read for conv as NDJSON, one event a
// line, then the end line that counts them.
func WriteRecorded(w io.Writer, conv string, envs []Envelope) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, env := range envs {
		if err := enc.Encode(recordedLine{Subject: env.Subject, Seq: env.Seq, Time: env.Time, Type: env.Type, V: env.V, ID: env.ID, Data: env.Data}); err != nil {
			return fmt.Errorf("recorded events of %s, seq %d: %w", conv, env.Seq, err)
		}
	}
	if err := enc.Encode(recordedLine{End: &ExportSummary{Conversation: conv, Events: len(envs)}}); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadRecorded reads what WriteRecorded wrote: an unreadable line, an
// answer cut before its end line or one whose count differs is an error
// naming the line.
func ReadRecorded(r io.Reader) ([]Envelope, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var envs []Envelope
	for n := 1; sc.Scan(); n++ {
		var l recordedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("recorded events, line %d: %w", n, err)
		}
		if l.End != nil {
			if l.End.Events != len(envs) {
				return nil, fmt.Errorf("recorded events, line %d: the end line counts %d events, %d arrived", n, l.End.Events, len(envs))
			}
			return envs, nil
		}
		if l.Type == "" {
			return nil, fmt.Errorf("recorded events, line %d: no type", n)
		}
		envs = append(envs, Envelope{Type: l.Type, V: l.V, ID: l.ID, Time: l.Time, Data: l.Data, Subject: l.Subject, Seq: l.Seq})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("recorded events: %w", err)
	}
	return nil, errors.New("recorded events: the answer ends before its end line")
}
