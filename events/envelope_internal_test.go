package events

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// The hand-written encoding is byte-identical to json.Marshal.
func TestMarshalEnvelopeMatchesEncodingJSON(t *testing.T) {
	for _, env := range []Envelope{
		MustNew(&MessageReceived{Channel: "web", Text: "hé \"quoted\" <b>&</b>\n"}),
		{Type: "run_finished", V: 12, ID: "abc", Time: time.Date(2026, 11, 30, 1, 2, 3, 456000, time.UTC), Data: json.RawMessage(`{"run_id":"r","status":"done"}`)},
		{Type: "run_finished", V: 1, ID: "abc", Time: time.Date(2026, 11, 30, 1, 2, 3, 0, time.FixedZone("x", 3600)), Data: json.RawMessage(`{}`)},
	} {
		got, err := marshalEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(env)
		if !bytes.Equal(got, want) {
			t.Errorf("marshalEnvelope =\n%s\nwant\n%s", got, want)
		}
	}
}

// The fast decoder agrees with json.Unmarshal on every body.
func FuzzUnmarshalEnvelopeAgreesWithEncodingJSON(f *testing.F) {
	seed, _ := marshalEnvelope(MustNew(&MessageReceived{Channel: "web", Text: "hi"}))
	f.Add(seed)
	f.Add([]byte(`{"type":"a","v":1,"id":"b","time":"2026-11-30T00:00:00Z","data":{}} `))
	f.Add([]byte(`{"type":"a","v":1,"id":"b","time":"2026-11-30T00:00:00Z","data":{},"x":1}`))
	f.Add([]byte(`{"type":"a","v":99999999999,"id":"b","time":"bad","data":[}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow Envelope
		errFast := unmarshalEnvelope(body, &fast)
		errSlow := json.Unmarshal(body, &slow)
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("fast err %v, slow err %v for %q", errFast, errSlow, body)
		}
		if errFast != nil {
			return
		}
		if fast.Type != slow.Type || fast.V != slow.V || fast.ID != slow.ID || !fast.Time.Equal(slow.Time) {
			t.Fatalf("fast %+v != slow %+v for %q", fast, slow, body)
		}
		var a, b any
		if json.Unmarshal(fast.Data, &a) != nil || json.Unmarshal(slow.Data, &b) != nil {
			if !bytes.Equal(bytes.TrimSpace(fast.Data), bytes.TrimSpace(slow.Data)) {
				t.Fatalf("data differs: %q vs %q", fast.Data, slow.Data)
			}
		}
	})
}
