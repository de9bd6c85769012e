package loop_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// exported writes the conversation's export (the audit trail) under an
// audit key, checks that it verifies as written by that key and that an
// edited line of the given type does not, and counts its lines by event
// type.
func exported(t *testing.T, h *harness, tamper string) map[string]int {
	t.Helper()
	key := bytes.Repeat([]byte{7}, events.MinAuditKey)
	var buf bytes.Buffer
	if _, err := events.WriteExport(&buf, h.conv, key, h.log.Read(t.Context(), events.Conv(h.conv).Filter(), 0)); err != nil {
		t.Fatal(err)
	}
	if v, err := events.VerifyExport(bytes.NewReader(buf.Bytes()), key); err != nil || !v.Proven {
		t.Fatalf("export does not verify: %+v %v", v, err)
	}
	counts := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	edited := false
	for i, line := range lines {
		var l events.ExportLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("export line %d: %v", i+1, err)
		}
		counts[l.Type]++
		if l.Type == tamper && !edited {
			// A forger rewrites what was compacted: the chain names it.
			lines[i] = strings.Replace(line, `"data":{`, `"data":{"forged":1,`, 1)
			edited = true
		}
	}
	if tamper != "" {
		if !edited {
			t.Fatalf("the export holds no %s line", tamper)
		}
		if _, err := events.VerifyExport(strings.NewReader(strings.Join(lines, "\n")+"\n"), key); err == nil {
			t.Errorf("an export with an edited %s line verifies", tamper)
		}
	}
	return counts
}
