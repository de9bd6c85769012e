package events

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// An export is a conversation's stream as JSONL, one event per line. Each
// line ends with two members: "prev", the hash of the previous line (for the
// first line: hex SHA-256 of the conversation id), and "hash", the hex
// SHA-256 of the line itself up to prev, closed with "}" — that is, of the
// line's bytes with `,"hash":"…"` removed. So an altered line is named by its
// own hash, a removed or moved one by the chain. A last line {"end":…}
// counts the events, so cutting lines off the end is detected too.

// ExportLine is one event line of an export.
type ExportLine struct {
	Subject string          `json:"subject"`
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Type    string          `json:"type"`
	V       int             `json:"v"`
	ID      string          `json:"id"`
	Data    json.RawMessage `json:"data"`
	Prev    string          `json:"prev"`
	Hash    string          `json:"hash,omitempty"`
}

// ExportEnd is the last line of an export.
type ExportEnd struct {
	End  ExportSummary `json:"end"`
	Prev string        `json:"prev"`
	Hash string        `json:"hash,omitempty"`
}

// ExportSummary says what the export holds.
type ExportSummary struct {
	Conversation string `json:"conversation"`
	Events       int    `json:"events"`
}

// WriteExport writes the events of conversation as a hash-chained JSONL
// export and returns how many events it wrote.
func WriteExport(w io.Writer, conversation string, evs iter.Seq2[Envelope, error]) (int, error) {
	bw := bufio.NewWriter(w)
	prev := chainHash([]byte(conversation))
	n := 0
	for env, err := range evs {
		if err != nil {
			return n, fmt.Errorf("export %s: %w", conversation, err)
		}
		line, err := json.Marshal(ExportLine{Subject: env.Subject, Seq: env.Seq, Time: env.Time, Type: env.Type, V: env.V, ID: env.ID, Data: env.Data, Prev: prev})
		if err != nil {
			return n, fmt.Errorf("export %s seq %d: %w", env.Subject, env.Seq, err)
		}
		prev = writeSealed(bw, line)
		n++
	}
	end, _ := json.Marshal(ExportEnd{End: ExportSummary{Conversation: conversation, Events: n}, Prev: prev})
	writeSealed(bw, end)
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export %s: %w", conversation, err)
	}
	return n, nil
}

// writeSealed writes a JSON object line with its own hash appended as the
// last member and returns that hash.
func writeSealed(w *bufio.Writer, obj []byte) string {
	h := chainHash(obj)
	w.Write(obj[:len(obj)-1])
	w.WriteString(`,"hash":"`)
	w.WriteString(h)
	w.WriteString("\"}\n")
	return h
}

// unseal checks a line's own hash and returns it.
func unseal(line []byte) (string, error) {
	i := bytes.LastIndex(line, []byte(`,"hash":"`))
	if i < 0 {
		return "", errors.New("no hash")
	}
	stored := line[i+len(`,"hash":"`):]
	if len(stored) != 64+2 || string(stored[64:]) != `"}` {
		return "", errors.New("malformed hash")
	}
	content := append(bytes.Clone(line[:i]), '}')
	if chainHash(content) != string(stored[:64]) {
		return "", errors.New("line altered: its hash does not match its content")
	}
	return string(stored[:64]), nil
}

func chainHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ErrBrokenExport is wrapped by every verification failure.
var ErrBrokenExport = errors.New("export does not verify")

// BrokenLineError names the first line (1-based) that fails verification.
type BrokenLineError struct {
	Line   int
	Reason string
}

func (e *BrokenLineError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

func (e *BrokenLineError) Unwrap() error { return ErrBrokenExport }

// VerifyExport checks an export's hash chain, sequence order and end line.
// It returns the conversation and the number of events when intact, else a
// *BrokenLineError naming the first broken line.
func VerifyExport(r io.Reader) (conversation string, count int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var prev string
	var lastSeq uint64
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		broken := func(format string, a ...any) (string, int, error) {
			return "", 0, &BrokenLineError{Line: lineNo, Reason: fmt.Sprintf(format, a...)}
		}
		own, err := unseal(line)
		if err != nil {
			return broken("%v", err)
		}
		if bytes.HasPrefix(line, []byte(`{"end":`)) {
			var end ExportEnd
			if err := strictUnmarshal(line, &end); err != nil {
				return broken("unreadable end line: %v", err)
			}
			if lineNo == 1 {
				prev = chainHash([]byte(end.End.Conversation))
				conversation = end.End.Conversation
			}
			if end.End.Conversation != conversation {
				return broken("end line names conversation %q, events are of %q", end.End.Conversation, conversation)
			}
			if end.Prev != prev {
				return broken("hash chain broken: prev is not the hash of line %d", lineNo-1)
			}
			if end.End.Events != count {
				return broken("end line counts %d events, file has %d", end.End.Events, count)
			}
			if sc.Scan() {
				return "", 0, &BrokenLineError{Line: lineNo + 1, Reason: "text after the end line"}
			}
			if err := sc.Err(); err != nil {
				return "", 0, fmt.Errorf("read export: %w", err)
			}
			return conversation, count, nil
		}
		var ev ExportLine
		if err := strictUnmarshal(line, &ev); err != nil {
			return broken("not an event line: %v", err)
		}
		if lineNo == 1 {
			conversation = ScopeOf(ev.Subject).ID()
			if ScopeOf(ev.Subject).Kind() != "conv" || conversation == "" {
				return broken("subject %q is not a conversation's", ev.Subject)
			}
			prev = chainHash([]byte(conversation))
		}
		if ev.Prev != prev {
			if lineNo == 1 {
				return broken("hash chain broken: prev is not the hash of conversation id %q", conversation)
			}
			return broken("hash chain broken: prev is not the hash of line %d (a line was removed, added or moved)", lineNo-1)
		}
		if got := ScopeOf(ev.Subject); got != Conv(conversation) {
			return broken("subject %q is outside conversation %q", ev.Subject, conversation)
		}
		if ev.Seq <= lastSeq {
			return broken("sequence %d not after %d", ev.Seq, lastSeq)
		}
		lastSeq = ev.Seq
		prev = own
		count++
	}
	if err := sc.Err(); err != nil {
		return "", 0, fmt.Errorf("read export: %w", err)
	}
	return "", 0, &BrokenLineError{Line: lineNo + 1, Reason: "missing end line: the export was cut short"}
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
