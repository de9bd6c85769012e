package events

import (
	"bufio"
	"bytes"
	"crypto/hmac"
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
//
// Anyone can recompute a SHA-256 chain, so that chain proves integrity
// only. An export written with the home's audit key adds a third member,
// "mac": HMAC-SHA256 under the key of the previous line's mac and this
// line's hash (the first chained from the conversation id). Who lacks the
// key cannot forge it: a verifier holding the key knows the file was
// written by that home and not changed since. Exports written before keyed
// chains have no mac and still verify, as integrity only.

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
	MAC     string          `json:"mac,omitempty"`
}

// ExportEnd is the last line of an export.
type ExportEnd struct {
	End  ExportSummary `json:"end"`
	Prev string        `json:"prev"`
	Hash string        `json:"hash,omitempty"`
	MAC  string        `json:"mac,omitempty"`
}

// ExportSummary says what the export holds.
type ExportSummary struct {
	Conversation string `json:"conversation"`
	Events       int    `json:"events"`
}

// MinAuditKey is the shortest audit key accepted (bytes).
const MinAuditKey = 32

// WriteExport writes the events of conversation as a hash-chained JSONL
// export, keyed with the home's audit key, and returns how many events it
// wrote. A nil key writes the plain chain of exports before keyed ones.
func WriteExport(w io.Writer, conversation string, key []byte, evs iter.Seq2[Envelope, error]) (int, error) {
	if key != nil && len(key) < MinAuditKey {
		return 0, fmt.Errorf("export %s: audit key of %d bytes, want at least %d", conversation, len(key), MinAuditKey)
	}
	bw := bufio.NewWriter(w)
	prev := chainHash([]byte(conversation))
	mac := firstMAC(key, conversation)
	n := 0
	for env, err := range evs {
		if err != nil {
			return n, fmt.Errorf("export %s: %w", conversation, err)
		}
		line, err := json.Marshal(ExportLine{Subject: env.Subject, Seq: env.Seq, Time: env.Time, Type: env.Type, V: env.V, ID: env.ID, Data: env.Data, Prev: prev})
		if err != nil {
			return n, fmt.Errorf("export %s seq %d: %w", env.Subject, env.Seq, err)
		}
		prev, mac = writeSealed(bw, line, key, mac)
		n++
	}
	end, _ := json.Marshal(ExportEnd{End: ExportSummary{Conversation: conversation, Events: n}, Prev: prev})
	writeSealed(bw, end, key, mac)
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export %s: %w", conversation, err)
	}
	return n, nil
}

// writeSealed writes a JSON object line with its own hash (and, with a
// key, its mac) appended as the last members and returns both.
func writeSealed(w *bufio.Writer, obj []byte, key []byte, prevMAC string) (hash, mac string) {
	h := chainHash(obj)
	w.Write(obj[:len(obj)-1])
	w.WriteString(`,"hash":"`)
	w.WriteString(h)
	if key != nil {
		mac = lineMAC(key, prevMAC, h)
		w.WriteString(`","mac":"`)
		w.WriteString(mac)
	}
	w.WriteString("\"}\n")
	return h, mac
}

// firstMAC seeds the keyed chain with the conversation id.
func firstMAC(key []byte, conversation string) string {
	if key == nil {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("crew export v2\nconversation\n" + conversation))
	return hex.EncodeToString(m.Sum(nil))
}

func lineMAC(key []byte, prevMAC, hash string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("crew export v2\n" + prevMAC + "\n" + hash))
	return hex.EncodeToString(m.Sum(nil))
}

// unseal checks a line's own hash and returns it, and its mac if any.
func unseal(line []byte) (hash, mac string, err error) {
	i := bytes.LastIndex(line, []byte(`,"hash":"`))
	if i < 0 {
		return "", "", errors.New("no hash")
	}
	stored := line[i+len(`,"hash":"`):]
	switch {
	case len(stored) == 64+2 && string(stored[64:]) == `"}`:
	case len(stored) == 64+len(`","mac":"`)+64+2 && string(stored[64:64+len(`","mac":"`)]) == `","mac":"` && string(stored[len(stored)-2:]) == `"}`:
		mac = string(stored[64+len(`","mac":"`) : len(stored)-2])
		if _, err := hex.DecodeString(mac); err != nil {
			return "", "", errors.New("malformed keyed hash")
		}
	default:
		return "", "", errors.New("malformed hash")
	}
	content := append(bytes.Clone(line[:i]), '}')
	if chainHash(content) != string(stored[:64]) {
		return "", "", errors.New("line altered: its hash does not match its content")
	}
	return string(stored[:64]), mac, nil
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

// Verified is what an intact export holds.
type Verified struct {
	Conversation string
	Events       int
	// Keyed: every line carries a keyed hash (mac).
	Keyed bool
	// Proven: the macs were checked with the key given: the file was
	// written by the home holding that key.
	Proven bool
}

// Verdict is what crew verify says of the intact export file it read
// (checked with a key, if haveKey, which why names) and the exit code:
// 0 only for "intact, written by this home"; 1 for a file without keyed
// hashes checked against a home that has a key (they were stripped, or
// another writer made it), said on stderr (toStderr); 3 for "origin not
// proven" unless integrityOnly asked for no more than the hash chain.
func (v Verified) Verdict(file, why string, haveKey, integrityOnly bool) (line string, code int, toStderr bool) {
	head := fmt.Sprintf("ok: %d events of conversation %s", v.Events, v.Conversation)
	if code = 3; integrityOnly {
		code = 0
	}
	switch {
	case v.Proven:
		return fmt.Sprintf("%s: intact, written by this home (%s)", head, why), 0, false
	case !v.Keyed && haveKey:
		return fmt.Sprintf("%s: line 1: no keyed hash, but this home has an audit key (%s): its keyed hashes were removed, or this home did not write it", file, why), 1, true
	case !v.Keyed:
		return head + ": hash chain intact; origin not proven: the file has no keyed hashes (an export from before keyed chains, or they were removed)", code, false
	}
	return fmt.Sprintf("%s: hash chain intact; origin not proven (%s)", head, why), code, false
}

// VerifyExport checks an export's hash chain, sequence order and end line,
// and with a key its keyed chain. It returns what the export holds when
// intact, else a *BrokenLineError naming the first broken line. Without a
// key, or for an export without macs, integrity only is checked.
func VerifyExport(r io.Reader, key []byte) (Verified, error) {
	conversation, count, keyed, err := verifyExport(r, key)
	if err != nil {
		return Verified{}, err
	}
	return Verified{Conversation: conversation, Events: count, Keyed: keyed, Proven: keyed && key != nil}, nil
}

func verifyExport(r io.Reader, key []byte) (conversation string, count int, keyed bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var prev, prevMAC string
	var lastSeq uint64
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		broken := func(format string, a ...any) (string, int, bool, error) {
			return "", 0, false, &BrokenLineError{Line: lineNo, Reason: fmt.Sprintf(format, a...)}
		}
		own, mac, err := unseal(line)
		if err != nil {
			return broken("%v", err)
		}
		if lineNo == 1 {
			keyed = mac != ""
		} else if keyed != (mac != "") {
			return broken("keyed hash missing or added: line 1 %s one", map[bool]string{true: "has", false: "has no"}[keyed])
		}
		// checkMAC runs once the line's conversation is known.
		checkMAC := func() error {
			if !keyed || key == nil {
				return nil
			}
			if lineNo == 1 {
				prevMAC = firstMAC(key, conversation)
			}
			want := lineMAC(key, prevMAC, own)
			if !hmac.Equal([]byte(want), []byte(mac)) {
				return &BrokenLineError{Line: lineNo, Reason: "keyed hash fails: the line was altered (its plain hash recomputed), or the export was written with another home's audit key"}
			}
			prevMAC = mac
			return nil
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
			if err := checkMAC(); err != nil {
				return "", 0, false, err
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
				return "", 0, false, &BrokenLineError{Line: lineNo + 1, Reason: "text after the end line"}
			}
			if err := sc.Err(); err != nil {
				return "", 0, false, fmt.Errorf("read export: %w", err)
			}
			return conversation, count, keyed, nil
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
		if err := checkMAC(); err != nil {
			return "", 0, false, err
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
		return "", 0, false, fmt.Errorf("read export: %w", err)
	}
	return "", 0, false, &BrokenLineError{Line: lineNo + 1, Reason: "missing end line: the export was cut short"}
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
