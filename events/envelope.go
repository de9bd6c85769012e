package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nuid"
	fastjson "github.com/segmentio/encoding/json"
)

// Event is a payload: a past-tense fact with a stable type name and a
// version. Type names are never renamed; a changed payload gets a new version
// and the old one stays decodable.
type Event interface {
	EventType() string
	EventVersion() int
}

// Envelope is one stored event. Subject and Seq are set by the log when the
// event is read or appended; they are not part of the stored body.
type Envelope struct {
	Type string          `json:"type"`
	V    int             `json:"v"`
	ID   string          `json:"id"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`

	Subject string `json:"-"`
	Seq     uint64 `json:"-"`

	// payload is Data decoded once by Decoded, shared by env's copies.
	payload Event
}

// New wraps e in an envelope with a fresh id and the current time.
func New(e Event) (Envelope, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %s: %w", e.EventType(), err)
	}
	return Envelope{
		Type: e.EventType(),
		V:    e.EventVersion(),
		ID:   nuid.Next(),
		Time: time.Now().UTC().Truncate(time.Microsecond),
		Data: data,
	}, nil
}

// MustNew is New for payloads that cannot fail to encode (plain structs).
func MustNew(e Event) Envelope {
	env, err := New(e)
	if err != nil {
		panic(err)
	}
	return env
}

// Decode returns the typed payload of env. It fails with ErrUnknownType or
// ErrNewerVersion (wrapped in a DecodeError naming subject and sequence).
// For an envelope from Decoded it returns the payload decoded there.
func (env Envelope) Decode() (Event, error) {
	if env.payload != nil {
		return env.payload, nil
	}
	mk, err := lookup(env.Type, env.V)
	if err != nil {
		return nil, &DecodeError{Subject: env.Subject, Seq: env.Seq, Err: err}
	}
	e := mk()
	// The payload is decoded by every projection and every state load:
	// segmentio's decoder (encoding/json's behaviour, about twice as fast).
	if err := fastjson.Unmarshal(env.Data, e); err != nil {
		return nil, &DecodeError{Subject: env.Subject, Seq: env.Seq, Err: fmt.Errorf("%s v%d: %w", env.Type, env.V, err)}
	}
	return e, nil
}

// Decoded returns env holding its payload decoded, so that every Decode
// of it and of its copies returns that one value (which its readers must
// not change): the projections, which each decode every event, decode it
// once. An envelope whose payload does not decode is returned as it is, so
// Decode gives the error.
func (env Envelope) Decoded() Envelope {
	if env.payload == nil {
		if e, err := env.Decode(); err == nil {
			env.payload = e
		}
	}
	return env
}

// decode parses a stored body and checks its type and version are known.
func decode(subject string, seq uint64, body []byte) (Envelope, error) {
	var env Envelope
	if err := unmarshalEnvelope(body, &env); err != nil {
		return Envelope{}, &DecodeError{Subject: subject, Seq: seq, Err: err}
	}
	env.Subject, env.Seq = subject, seq
	if _, err := lookup(env.Type, env.V); err != nil {
		return Envelope{}, &DecodeError{Subject: subject, Seq: seq, Err: err}
	}
	return env, nil
}

// registry maps type → version → constructor of a pointer to the payload.
var registry = map[string]map[int]func() Event{}

// register adds a payload type. Called from init in types.go only.
func register[T any, P interface {
	*T
	Event
}]() {
	mk := func() Event { return P(new(T)) }
	e := mk()
	byV := registry[e.EventType()]
	if byV == nil {
		byV = map[int]func() Event{}
		registry[e.EventType()] = byV
	}
	if _, dup := byV[e.EventVersion()]; dup {
		panic(fmt.Sprintf("events: %s v%d registered twice", e.EventType(), e.EventVersion()))
	}
	byV[e.EventVersion()] = mk
}

func lookup(typ string, v int) (func() Event, error) {
	byV, ok := registry[typ]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, typ)
	}
	mk, ok := byV[v]
	if !ok {
		newest := 0
		for known := range byV {
			newest = max(newest, known)
		}
		if v > newest {
			return nil, fmt.Errorf("%s v%d: %w (newest known v%d)", typ, v, ErrNewerVersion, newest)
		}
		return nil, fmt.Errorf("%w %q v%d", ErrUnknownType, typ, v)
	}
	return mk, nil
}

// Registered lists every known (type, version) with a zero payload value, in
// a stable order. Used by the schema tests and the docs.
func Registered() []Event {
	var out []Event
	for _, byV := range registry {
		for _, mk := range byV {
			out = append(out, mk())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].EventType() != out[j].EventType() {
			return out[i].EventType() < out[j].EventType()
		}
		return out[i].EventVersion() < out[j].EventVersion()
	})
	return out
}

// SchemaPath is where the JSON Schema of an event type lives in schemas/.
func SchemaPath(typ string, v int) string { return fmt.Sprintf("events/%s.v%d.json", typ, v) }

// TypeOf returns the Go type name of a payload, for messages.
func TypeOf(e Event) string { return reflect.TypeOf(e).Elem().Name() }

// marshalEnvelope writes the stored body by hand, in the field order
// json.Marshal would use. Type and id are restricted to characters that need
// no escaping (checked here), so the result is what json.Marshal produces,
// without re-scanning Data; a test compares the two.
func marshalEnvelope(env Envelope) ([]byte, error) {
	if !plainToken(env.Type) || !plainToken(env.ID) {
		return json.Marshal(env)
	}
	if !json.Valid(env.Data) && env.Data != nil {
		return nil, fmt.Errorf("envelope %s: data is not valid JSON", env.Type)
	}
	data := env.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	b := make([]byte, 0, 64+len(env.Type)+len(env.ID)+len(data))
	b = append(b, `{"type":"`...)
	b = append(b, env.Type...)
	b = append(b, `","v":`...)
	b = strconv.AppendInt(b, int64(env.V), 10)
	b = append(b, `,"id":"`...)
	b = append(b, env.ID...)
	b = append(b, `","time":`...)
	t, err := env.Time.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("envelope %s: %w", env.Type, err)
	}
	b = append(b, t...)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	b = append(b, '}')
	return b, nil
}

// unmarshalEnvelope is the inverse fast path: it accepts exactly the shape
// marshalEnvelope writes and falls back to json.Unmarshal for anything else.
// Data aliases body.
func unmarshalEnvelope(body []byte, env *Envelope) error {
	rest, ok := cutPrefix(body, `{"type":"`)
	var typ, id, ts []byte
	var v int64
	if ok {
		typ, rest, ok = cutPlain(rest, '"')
	}
	if ok {
		rest, ok = cutPrefix(rest, `,"v":`)
	}
	if ok {
		var digits []byte
		digits, rest, ok = cutDigits(rest)
		if ok {
			var err error
			v, err = strconv.ParseInt(string(digits), 10, 32)
			ok = err == nil
		}
	}
	if ok {
		rest, ok = cutPrefix(rest, `,"id":"`)
	}
	if ok {
		id, rest, ok = cutPlain(rest, '"')
	}
	if ok {
		rest, ok = cutPrefix(rest, `,"time":"`)
	}
	if ok {
		ts, rest, ok = cutPlain(rest, '"')
	}
	if ok {
		rest, ok = cutPrefix(rest, `,"data":`)
	}
	if ok && len(rest) > 0 && rest[len(rest)-1] == '}' {
		var t time.Time
		if err := t.UnmarshalText(ts); err == nil {
			env.Type, env.V, env.ID, env.Time = string(typ), int(v), string(id), t
			env.Data = json.RawMessage(rest[:len(rest)-1])
			// The data itself is checked when the payload is decoded; here
			// only that it is one JSON value.
			if json.Valid(env.Data) {
				return nil
			}
		}
	}
	*env = Envelope{}
	return json.Unmarshal(body, env)
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// cutPlain returns the bytes before end if they are all plain token
// characters.
func cutPlain(b []byte, end byte) (tok, rest []byte, ok bool) {
	for i, c := range b {
		if c == end {
			return b[:i], b[i+1:], i > 0
		}
		if !plainByte(c) {
			return nil, b, false
		}
	}
	return nil, b, false
}

func cutDigits(b []byte) (digits, rest []byte, ok bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return b[:i], b[i:], i > 0 && i < 10
}

// plainByte: characters of types, ids and RFC 3339 times that JSON never
// escapes.
func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':' || c == '+'
}

func plainToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}

// DecodeStored parses a stored message body as read by a consumer outside
// this package (projections), checking type and version.
func DecodeStored(subject string, seq uint64, body []byte) (Envelope, error) {
	return decode(subject, seq, body)
}
