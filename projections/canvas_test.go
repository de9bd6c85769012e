package projections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// seedCanvases appends a messy canvas history: creates, saves that add or
// replace a version, restores, renames, seen marks, focus changes on
// conversations, deletes and events after a delete.
func seedCanvases(s *seeder, rng *rand.Rand, n int) uint64 {
	var ids []string
	latest := map[string]int{}
	var last uint64
	for range n {
		switch k := rng.IntN(100); {
		case len(ids) == 0 || k < 10:
			id := fmt.Sprintf("a%d", len(ids))
			ids = append(ids, id)
			latest[id] = 1
			last = s.add(events.Canvas(id), &events.ArtifactCreated{Title: "Doc " + id, Kind: events.KindMarkdown, Content: strings.Repeat("line\n", rng.IntN(20)),
				Author: "master", Conversation: fmt.Sprintf("c%d", rng.IntN(3))}).Seq
		case k < 60:
			id := ids[rng.IntN(len(ids))]
			e := &events.ArtifactWritten{Version: latest[id] + 1, Op: events.OpSave, Content: strings.Repeat("x", rng.IntN(50)), Author: events.AuthorOwner}
			if rng.IntN(3) == 0 {
				e.Version, e.Replaces = latest[id], true
			}
			if rng.IntN(5) == 0 {
				e.Op, e.Note, e.RestoredFrom = events.OpRestore, "restored from v1", 1
				e.Version, e.Replaces = latest[id]+1, false
			}
			latest[id] = e.Version
			last = s.add(events.Canvas(id), e).Seq
		case k < 70:
			id := ids[rng.IntN(len(ids))]
			last = s.add(events.Canvas(id), &events.ArtifactRenamed{Title: "Renamed " + id, Author: "coach", Conversation: "c9"}).Seq
		case k < 80:
			id := ids[rng.IntN(len(ids))]
			last = s.add(events.Canvas(id), &events.ArtifactSeen{Version: latest[id], Conversation: "c1"}).Seq
		case k < 95:
			last = s.conv(fmt.Sprintf("c%d", rng.IntN(4)), &events.CanvasFocused{Artifact: ids[rng.IntN(len(ids))], FromLine: 1, ToLine: 2})
		default:
			id := ids[rng.IntN(len(ids))]
			last = s.add(events.Canvas(id), &events.ArtifactDeleted{Author: events.AuthorOwner}).Seq
		}
	}
	return last
}

// The canvas projection rebuilt from the log is byte-identical to the one
// applied live, and its total counts exactly the versions kept.
func TestCanvasRebuildIsByteIdentical(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	last := seedCanvases(newSeeder(t, log), rand.New(rand.NewPCG(3, 5)), 300)
	live := openDB(t, "")
	r, err := open(ctx, log, live, nil, config{}, Canvases{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	want, err := Dump(live, Canvases{})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{`"canvas_versions"`, `\"seen\":true`, `\"deleted\":true`, `restored from v1`, `"canvas_focus"`} {
		if !strings.Contains(string(want), must) {
			t.Errorf("seeded history lacks %s", must)
		}
	}
	rebuilt := openDB(t, "")
	if err := rebuild(ctx, log, rebuilt, Canvases{}, 7); err != nil {
		t.Fatal(err)
	}
	got, _ := Dump(rebuilt, Canvases{})
	if string(got) != string(want) {
		t.Errorf("rebuilt canvas projection differs:\n%s", firstDiff(string(got), string(want)))
	}
	list, err := ListCanvases(live, "")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, c := range list {
		for _, v := range c.Versions {
			text, err := CanvasContent(live, c.ID, v.Version)
			if err != nil {
				t.Fatal(err)
			}
			if len(text) != v.Bytes || events.ContentDigest(text) != v.Digest {
				t.Errorf("%s v%d: content %d bytes, head says %d", c.ID, v.Version, len(text), v.Bytes)
			}
			sum += int64(len(text))
		}
	}
	if total, _ := CanvasBytes(live); total != sum {
		t.Errorf("total %d, versions kept hold %d", total, sum)
	}
	for i := 1; i < len(list); i++ {
		if list[i].Updated.After(list[i-1].Updated) {
			t.Errorf("list not newest first at %d", i)
		}
	}
}
