package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/nats-io/nuid"
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
func (env Envelope) Decode() (Event, error) {
	mk, err := lookup(env.Type, env.V)
	if err != nil {
		return nil, &DecodeError{Subject: env.Subject, Seq: env.Seq, Err: err}
	}
	e := mk()
	if err := json.Unmarshal(env.Data, e); err != nil {
		return nil, &DecodeError{Subject: env.Subject, Seq: env.Seq, Err: fmt.Errorf("%s v%d: %w", env.Type, env.V, err)}
	}
	return e, nil
}

// decode parses a stored body and checks its type and version are known.
func decode(subject string, seq uint64, body []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
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

func marshalEnvelope(env Envelope) ([]byte, error) { return json.Marshal(env) }

// DecodeStored parses a stored message body as read by a consumer outside
// this package (projections), checking type and version.
func DecodeStored(subject string, seq uint64, body []byte) (Envelope, error) {
	return decode(subject, seq, body)
}
