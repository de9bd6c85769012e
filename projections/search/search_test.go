package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// vocabulary of the generated home: ordinary words of a year of use,
// none of them the needle's.
var vocabulary = strings.Fields(`groceries oats banana dinner recipe pasta train ticket
	invoice tax receipt doctor appointment dentist running shoes marathon plan
	weekly review budget savings rent landlord email draft meeting notes slides
	garden tomatoes watering holiday flight hotel booking passport renewal
	birthday present sister cake bicycle tyre repair podcast episode book chapter
	laptop backup photos calendar reminder insurance car service parking permit`)

// The needle: said once, on 2026-10-14, in conversation web-needle.
const (
	needleConv  = "web-needle"
	needleText  = "The radiator valve in the bedroom keeps hissing since the heating came on."
	needleReply = "Bleed the radiator with the small key, then check the valve's pressure."
	needleQuery = "radiator hissing"
	synonymQ    = "heater whistling" // no word of it is in the home
)

// genHome appends n conversations (opened, one message, one final reply)
// spread from August to November through the events package, the needle
// among them; it returns the last sequence.
func genHome(t testing.TB, log *events.Log, n int) uint64 {
	t.Helper()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	sentence := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocabulary[rnd.IntN(len(vocabulary))]
		}
		return strings.Join(w, " ")
	}
	for i := range n {
		id := fmt.Sprintf("web-%05d", i)
		at := start.Add(time.Duration(i) * 122 * 24 * time.Hour / time.Duration(n))
		msg, reply := sentence(12), sentence(20)
		if i == n/2 {
			id, at, msg, reply = needleConv, time.Date(2026, 10, 14, 19, 5, 0, 0, time.UTC), needleText, needleReply
		}
		agent := "coach"
		if i%3 == 0 {
			agent = "main"
		}
		envs := []events.Envelope{
			stamp(events.MustNew(&events.ConversationOpened{Agent: agent, Channel: "web", Day: at.Format(time.DateOnly)}), at),
			stamp(events.MustNew(&events.MessageReceived{Channel: "web", Text: msg}), at),
			stamp(events.MustNew(&events.ModelCalled{RunID: "r" + id, Step: 1, Route: "fake", Model: "fake", Text: reply}), at.Add(time.Second)),
		}
		if _, err := log.Append(ctx, events.Conv(id), 0, envs...); err != nil {
			t.Fatal(err)
		}
	}
	last, err := log.Last(ctx, events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func stamp(env events.Envelope, at time.Time) events.Envelope {
	env.Time = at
	return env
}

// feed opens an index in a fresh folder and catches it up with log.
func feed(t testing.TB, log *events.Log, last uint64, setup func(*Index)) *Index {
	t.Helper()
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(x)
	}
	f, err := Start(x, log, log.Redactor(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); x.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := f.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	return x
}

func find(t testing.TB, x *Index, q Query) []Hit {
	t.Helper()
	hits, err := x.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestRecallFindsAPhraseSaidOnceInOctober: 2,000 conversations, and the
// one where the radiator hissed comes first, with its source.
func TestRecallFindsAPhraseSaidOnceInOctober(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 2000)
	x := feed(t, log, last, nil)
	hits := find(t, x, Query{Text: needleQuery})
	if len(hits) == 0 || hits[0].Conversation != needleConv {
		t.Fatalf("first hit %+v, want conversation %s", hits, needleConv)
	}
	h := hits[0]
	if h.Day != "2026-10-14" || h.Subject != events.Conv(needleConv).Subject(h.Kind2Type()) || h.Seq == 0 {
		t.Errorf("source %q day %s seq %d", h.Subject, h.Day, h.Seq)
	}
	if !strings.Contains(h.Source(), "conversation "+needleConv+" · 2026-10-14") {
		t.Errorf("Source() = %q", h.Source())
	}
	if len(h.Marks) == 0 || !strings.EqualFold(h.Snippet[h.Marks[0][0]:h.Marks[0][1]], "radiator") && !strings.EqualFold(h.Snippet[h.Marks[0][0]:h.Marks[0][1]], "hissing") {
		t.Errorf("snippet %q marks %v", h.Snippet, h.Marks)
	}
	// since and kind narrow it; a since after October drops it.
	if hits := find(t, x, Query{Text: needleQuery, Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}); len(hits) != 0 {
		t.Errorf("since November: %+v", hits)
	}
	if hits := find(t, x, Query{Text: needleQuery, Kinds: []string{KindReply}}); len(hits) != 1 || hits[0].Kind != KindReply || hits[0].Step != 1 {
		t.Errorf("replies only: %+v", hits)
	}
	// Without embeddings the synonym finds nothing.
	if hits := find(t, x, Query{Text: synonymQ}); len(hits) != 0 {
		t.Errorf("synonym found without embeddings: %+v", hits)
	}
}

// Kind2Type is the event type a conversation hit was stored from.
func (h Hit) Kind2Type() string {
	if h.Kind == KindReply {
		return events.TypeModelCalled
	}
	return events.TypeMessageReceived
}

// concepts is the test embedding server's meaning: words of one concept
// share a dimension.
var concepts = map[string]string{
	"radiator": "heat", "heater": "heat", "heating": "heat",
	"hissing": "sound", "whistling": "sound",
}

// embedServer is a deterministic Ollama /api/embed: each word adds 1 to
// its concept's dimension (or its own hashed one) of a 64-dimension
// vector.
func embedServer(t testing.TB, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "nomic-embed-text" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		out := make([][]float32, len(req.Input))
		tokens := 0
		for i, text := range req.Input {
			v := make([]float32, 64)
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
				tokens++
				if c, ok := concepts[w]; ok {
					w = c
				} else if len(w) < 4 {
					continue
				}
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%64]++
			}
			out[i] = v
		}
		json.NewEncoder(w).Encode(map[string]any{"embeddings": out, "prompt_eval_count": tokens})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRecallSynonymFoundWithEmbeddingRoute: "heater whistling" shares no
// word with the home; with an embedding route the radiator's conversation
// comes first, ranked by reciprocal-rank fusion; each call is recorded.
func TestRecallSynonymFoundWithEmbeddingRoute(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 300)
	var calls atomic.Int64
	srv := embedServer(t, &calls)
	var recorded atomic.Int64
	usage := func(ctx context.Context, route string, texts, tokens int, d time.Duration, err error) {
		if route == "ollama:nomic-embed-text" && err == nil && tokens > 0 {
			recorded.Add(1)
		}
	}
	x := feed(t, log, last, func(x *Index) {
		emb := &HTTPEmbedder{Name: "ollama:nomic-embed-text", BaseURL: srv.URL, Model: "nomic-embed-text"}
		if err := x.EnableEmbeddings(emb, usage, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	})
	eventstest.Eventually(t, "every document embedded", func() bool { return x.Pending() == 0 && x.vec.ready() })
	hits := find(t, x, Query{Text: synonymQ})
	if len(hits) == 0 || hits[0].Conversation != needleConv {
		t.Fatalf("synonym with embeddings: %+v", hits)
	}
	if got := recorded.Load(); got != calls.Load() || got < 600/embedBatch {
		t.Errorf("%d calls recorded of %d made", got, calls.Load())
	}
	// The words still rank first by words.
	if hits := find(t, x, Query{Text: needleQuery}); len(hits) == 0 || hits[0].Conversation != needleConv {
		t.Errorf("words with embeddings: %+v", hits)
	}
	// Cached by content hash: a rebuild asks for nothing but the query.
	before := calls.Load()
	dir := x.Dir()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(context.Background(), dir, log, log.Redactor()); err != nil {
		t.Fatal(err)
	}
	y, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	emb := &HTTPEmbedder{Name: "ollama:nomic-embed-text", BaseURL: srv.URL, Model: "nomic-embed-text"}
	if err := y.EnableEmbeddings(emb, usage, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	eventstest.Eventually(t, "vectors back after the rebuild", func() bool { return y.Pending() == 0 && y.vec.ready() })
	if hits := find(t, y, Query{Text: synonymQ}); len(hits) == 0 || hits[0].Conversation != needleConv {
		t.Errorf("synonym after rebuild: %+v", hits)
	}
	if calls.Load() != before {
		t.Errorf("rebuild embedded again: %d calls, had %d", calls.Load(), before)
	}
}

// TestRecallNeverIndexesASecret: a secret the process knows, said in a
// message and in a reply, is not findable; the words around it are.
func TestRecallNeverIndexesASecret(t *testing.T) {
	const secret = "sk-recall-Zq8Xw3rT9vLp2KdN5mYc"
	_, log := eventstest.Start(t)
	log.Redactor().Add("RECALL_TEST_KEY", secret)
	ctx := context.Background()
	envs := []events.Envelope{
		events.MustNew(&events.ConversationOpened{Agent: "main", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "my banking token is " + secret + " keep it"}),
		events.MustNew(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake", Model: "fake", Text: "Noted the banking token " + secret}),
	}
	if _, err := log.Append(ctx, events.Conv("web-secret"), 0, envs...); err != nil {
		t.Fatal(err)
	}
	last, _ := log.Last(ctx, events.Root+".>")
	x := feed(t, log, last, nil)
	for _, q := range []string{secret, "Zq8Xw3rT9vLp2KdN5mYc", "sk-recall"} {
		if hits := find(t, x, Query{Text: q}); len(hits) != 0 {
			t.Errorf("query %q found %+v", q, hits)
		}
	}
	hits := find(t, x, Query{Text: "banking token"})
	if len(hits) != 2 {
		t.Fatalf("banking token: %+v", hits)
	}
	for _, h := range hits {
		if strings.Contains(h.Text, secret) || strings.Contains(h.Snippet, secret) {
			t.Errorf("secret stored: %q", h.Text)
		}
	}
	// The feeder redacts too: a batch given raw text stores it redacted.
	b := x.newBatch(log.Redactor().String)
	if err := b.index("raw", Doc{Kind: KindNote, Text: "raw " + secret, Reach: []string{"all"}, At: time.Now().Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	if err := b.commit(last); err != nil {
		t.Fatal(err)
	}
	if hits := find(t, x, Query{Text: secret}); len(hits) != 0 {
		t.Errorf("raw batch indexed the secret: %+v", hits)
	}
}

// recallQueries are the 20 queries the rebuild test compares.
var recallQueries = []string{needleQuery, "groceries oats", "train ticket invoice", "doctor appointment", "running shoes marathon",
	"weekly review budget", "rent landlord", "email draft meeting", "garden tomatoes", "holiday flight hotel", "passport renewal",
	"birthday present sister", "bicycle tyre repair", "podcast episode", "laptop backup photos", "calendar reminder",
	"insurance car service", "parking permit", "bleed the valve", "cake recipe dinner"}

// TestRecallRebuildGivesTheSameTopTen: an index fed live and one rebuilt
// from the log answer the 20 queries with the same ten hits in the same
// order.
func TestRecallRebuildGivesTheSameTopTen(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 400)
	// A few canvases, notes and a deleted canvas, so every kind is there.
	appendMemoryAndCanvas(t, log)
	last, _ = log.Last(context.Background(), events.Root+".>")
	x := feed(t, log, last, nil)
	dir := t.TempDir()
	if _, err := Rebuild(context.Background(), dir, log, log.Redactor()); err != nil {
		t.Fatal(err)
	}
	y, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if cp, _ := y.Checkpoint(); cp != last {
		t.Errorf("rebuilt checkpoint %d, want %d", cp, last)
	}
	for _, q := range recallQueries {
		a, b := find(t, x, Query{Text: q}), find(t, y, Query{Text: q})
		if len(a) == 0 {
			t.Errorf("%q: no hits", q)
		}
		if ids(a) != ids(b) {
			t.Errorf("%q:\n live    %s\n rebuilt %s", q, ids(a), ids(b))
		}
	}
}

func ids(hits []Hit) string {
	var s []string
	for _, h := range hits {
		s = append(s, h.ID)
	}
	return strings.Join(s, " ")
}

// appendMemoryAndCanvas writes a memory note, a wiki page, a fact and
// canvases (one rewritten, one deleted) on conversation web-mem of agent
// coach.
func appendMemoryAndCanvas(t testing.TB, log *events.Log) {
	t.Helper()
	ctx := context.Background()
	conv := events.Conv("web-mem")
	call := func(tool, id, args, path string) []events.Envelope {
		return []events.Envelope{
			events.MustNew(&events.ToolCalled{RunID: "rm", Step: 1, CallID: id, Tool: tool, Arguments: json.RawMessage(args)}),
			events.MustNew(&events.ToolCompleted{RunID: "rm", Step: 1, CallID: id, Tool: tool, Output: "saved",
				Meta: map[string]any{"provenance": map[string]any{"path": path, "run_id": "rm", "call_id": id}}}),
		}
	}
	envs := []events.Envelope{events.MustNew(&events.ConversationOpened{Agent: "coach", Channel: "web"})}
	envs = append(envs, call("memory_save", "k1", `{"text":"the boiler engineer comes on Thursday"}`, "memory/2026-11-02.md")...)
	envs = append(envs, call("wiki_apply", "k2", `{"page":"flat","content":"# The flat\nThe boiler is a Vaillant ecoTEC.\n"}`, "wiki/flat.md")...)
	envs = append(envs, call("wiki_apply", "k3", `{"page":"flat","append":"Thermostat schedule: 6:30 to 22:00."}`, "wiki/flat.md")...)
	envs = append(envs, call("user_memory_save", "k4", `{"name":"home","text":"lives on the third floor"}`, "users/owner/facts/home.md")...)
	if _, err := log.Append(ctx, conv, 0, envs...); err != nil {
		t.Fatal(err)
	}
	canvas := func(id string, evs ...events.Event) {
		var envs []events.Envelope
		for _, e := range evs {
			envs = append(envs, events.MustNew(e))
		}
		if _, err := log.Append(ctx, events.Canvas(id), 0, envs...); err != nil {
			t.Fatal(err)
		}
	}
	canvas("plan", &events.ArtifactCreated{Title: "Heating plan", Kind: events.KindMarkdown, Content: "# Heating plan\nbleed the valve upstairs\ncall the landlord\n", Author: "coach", Conversation: "web-mem"},
		&events.ArtifactWritten{Version: 2, Op: events.OpEdit, Content: "# Heating plan\ncall the landlord\nbuy a thermometer\n", Author: "coach", Conversation: "web-mem"})
	canvas("gone", &events.ArtifactCreated{Title: "Old list", Kind: events.KindMarkdown, Content: "quince jam\n", Author: "coach"},
		&events.ArtifactDeleted{Author: "owner"})
}

// TestRecallIndexesMemoryAndCanvases: notes, folded wiki pages and facts,
// a canvas's latest version whole and its older one as what it lost; a
// deleted canvas leaves nothing.
func TestRecallIndexesMemoryAndCanvases(t *testing.T) {
	_, log := eventstest.Start(t)
	appendMemoryAndCanvas(t, log)
	last, _ := log.Last(context.Background(), events.Root+".>")
	x := feed(t, log, last, nil)
	one := func(q string, kinds ...string) Hit {
		t.Helper()
		hits := find(t, x, Query{Text: q, Kinds: kinds})
		if len(hits) != 1 {
			t.Fatalf("%q: %d hits %+v", q, len(hits), hits)
		}
		return hits[0]
	}
	if h := one("boiler engineer", KindNote); h.Agent != "coach" || h.Path != "memory/2026-11-02.md" || h.Run != "rm" {
		t.Errorf("note %+v", h)
	}
	if h := one("thermostat Vaillant", KindWiki); !strings.Contains(h.Text, "ecoTEC") || !strings.Contains(h.Text, "Thermostat") {
		t.Errorf("wiki page not folded: %q", h.Text)
	}
	one("third floor", KindFact)
	if h := one("thermometer", KindCanvas); h.Version != 2 || h.Canvas != "plan" {
		t.Errorf("canvas %+v", h)
	}
	if h := one("upstairs", KindCanvasV); h.Version != 1 || strings.Contains(h.Text, "landlord") {
		t.Errorf("old version %+v", h)
	}
	if hits := find(t, x, Query{Text: "quince jam"}); len(hits) != 0 {
		t.Errorf("deleted canvas found: %+v", hits)
	}
}

// TestRecallReachRulesPerSeat: the master reaches everything; an agent its
// own conversations and notes and the shared wiki and facts, not another
// agent's; a delegated child also its root conversation; a teammate its
// team lead's; a canvas by the canvas rules.
func TestRecallReachRulesPerSeat(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := context.Background()
	open := func(id string, o events.ConversationOpened, text string) {
		t.Helper()
		envs := []events.Envelope{events.MustNew(&o), events.MustNew(&events.MessageReceived{Channel: o.Channel, Text: text})}
		if _, err := log.Append(ctx, events.Conv(id), 0, envs...); err != nil {
			t.Fatal(err)
		}
	}
	open("web-main", events.ConversationOpened{Agent: "main", Channel: "web"}, "the quarterly plan for the allotment")
	open("web-coach", events.ConversationOpened{Agent: "coach", Channel: "web"}, "the quarterly plan for running")
	open("del-1", events.ConversationOpened{Agent: "writer", Channel: "delegate", RootID: "web-main", ParentConversation: "web-main"}, "the quarterly plan draft")
	open("team-1", events.ConversationOpened{Agent: "critic", Channel: "team", Team: "web-coach", Member: "critic"}, "the quarterly plan review")
	appendMemoryAndCanvas(t, log) // coach's note, shared wiki and fact, coach's canvas on web-mem
	last, _ := log.Last(ctx, events.Root+".>")
	x := feed(t, log, last, nil)
	convs := func(reach []string, q string, kinds ...string) string {
		var out []string
		for _, h := range find(t, x, Query{Text: q, Reach: reach, Limit: 50, Kinds: kinds}) {
			out = append(out, h.Kind+":"+h.Conversation+h.Canvas+h.Path)
		}
		return strings.Join(sortStrings(out), " ")
	}
	seats := []struct {
		seat, agent, conv, want string
	}{
		{"master", "main", "web-main", "message:del-1 message:team-1 message:web-coach message:web-main"},
		{"agent", "coach", "web-coach", "message:web-coach"},
		{"delegated child", "writer", "del-1", "message:del-1 message:web-main"},
		{"teammate", "critic", "team-1", "message:team-1 message:web-coach"},
		{"stranger", "nobody", "", ""},
	}
	for _, s := range seats {
		if got := convs(x.ReachOf("main", s.agent, s.conv), "quarterly plan", KindMessage); got != s.want {
			t.Errorf("%s: %q, want %q", s.seat, got, s.want)
		}
	}
	// Memory: the coach's note is the coach's; the wiki and facts everyone's.
	if got := convs(x.ReachOf("main", "writer", "del-1"), "boiler engineer thermostat floor"); got != "fact:web-memusers/owner/facts/home.md wiki:web-memwiki/flat.md" {
		t.Errorf("writer's memory: %q", got)
	}
	if got := convs(x.ReachOf("main", "coach", "web-coach"), "boiler engineer"); !strings.Contains(got, "note:") {
		t.Errorf("coach's own note: %q", got)
	}
	// Canvas rules: its author reaches it, a stranger does not.
	if got := convs(x.ReachOf("main", "coach", "web-coach"), "thermometer"); got != "canvas:plan" {
		t.Errorf("author's canvas: %q", got)
	}
	if got := convs(x.ReachOf("main", "critic", "team-1"), "thermometer"); got != "" {
		t.Errorf("stranger's canvas: %q", got)
	}
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// TestRecallIndexOfAnOlderShapeStartsAgain: an index written by a build of
// another index version (or of none) is started again empty, so the feeder
// indexes the whole log into the current mapping.
func TestRecallIndexOfAnOlderShapeStartsAgain(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 20)
	x := feed(t, log, last, nil)
	dir := x.Dir()
	if x.Reset() {
		t.Error("a fresh index says it was reset")
	}
	if err := x.idx.SetInternal([]byte(keyVersion), []byte("1")); err != nil {
		t.Fatal(err)
	}
	x.Close()
	y, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if cp, _ := y.Checkpoint(); !y.Reset() || cp != 0 {
		t.Fatalf("older index opened: reset %v checkpoint %d", y.Reset(), cp)
	}
	if n, _ := y.Count(); n != 0 {
		t.Errorf("%d documents of the older shape kept", n)
	}
	y.Close()
	z, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if z.Reset() {
		t.Error("an index of this version is reset again")
	}
}

// TestRecallRelatedClearsTheThreshold: what the turn notes tell of a first
// message — the hits sharing enough of its words, one a conversation,
// never the conversation itself, only what the seat reaches; a greeting
// or a message sharing one word is told nothing.
func TestRecallRelatedClearsTheThreshold(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 300)
	x := feed(t, log, last, nil)
	ctx := context.Background()
	related := func(text string, reach []string, exclude string) []Hit {
		t.Helper()
		hits, err := x.Related(ctx, Query{Text: text, Reach: reach}, 3, exclude)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	const first = "The bedroom radiator is hissing again, what did we do last time?"
	hits := related(first, nil, "web-new")
	if len(hits) != 1 || hits[0].Conversation != needleConv || len(hits[0].Marks) == 0 {
		t.Fatalf("related to %q: %+v", first, hits)
	}
	for _, c := range []struct{ text, why string }{
		{"hello", "a greeting"},
		{"my radiator", "one word shared"},
		{"The radiator of the car broke on the motorway near the coast", "one word of many"},
	} {
		if hits := related(c.text, nil, ""); len(hits) != 0 {
			t.Errorf("%s (%q): %+v", c.why, c.text, hits)
		}
	}
	if hits := related(first, nil, needleConv); len(hits) != 0 {
		t.Errorf("its own conversation: %+v", hits)
	}
	if hits := related(first, []string{"agent:nobody"}, ""); len(hits) != 0 {
		t.Errorf("beyond the seat's reach: %+v", hits)
	}
	// Words found in many conversations: at most three, each its own.
	hits = related("groceries dinner recipe pasta", nil, "")
	convs := map[string]bool{}
	for _, h := range hits {
		convs[h.Conversation] = true
	}
	if len(hits) != 3 || len(convs) != 3 {
		t.Errorf("common words: %d hits from %d conversations", len(hits), len(convs))
	}
}

// TestRankPassagesLikeRecall: memory_search's and wiki_search's ranking is
// recall's BM25 — stemmed words, the phrase higher, the title a little —
// with recall's marked snippets; ties keep the order given (newest first).
func TestRankPassagesLikeRecall(t *testing.T) {
	ps := []Passage{
		{Text: "- 09:00 bought vegetables at the market"},
		{Text: "- 10:00 the boiler engineer comes on Thursday"},
		{Text: "- 11:00 bought vegetables at the market"},
		{Text: "# Boiler\nService every October.", Title: "flat — The flat"},
		{Text: "- 12:00 nothing"},
	}
	rank := func(q string) string {
		t.Helper()
		got, err := Rank(context.Background(), q, ps, 0)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range got {
			s = append(s, fmt.Sprint(r.Index))
		}
		return strings.Join(s, " ")
	}
	for q, want := range map[string]string{
		"vegetable":                "0 2", // stemmed; a tie keeps the order given
		"engineers coming":         "1",
		"boiler engineer":          "1 3",
		"the flat":                 "3", // its title
		"sushi":                    "",
		"bought vegetables market": "0 2",
	} {
		if got := rank(q); got != want {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
	got, _ := Rank(context.Background(), "vegetables", ps, 1)
	if len(got) != 1 || got[0].Snippet != ps[0].Text || len(got[0].Marks) != 1 || got[0].Snippet[got[0].Marks[0][0]:got[0].Marks[0][1]] != "vegetables" {
		t.Errorf("snippet %+v", got)
	}
}

// TestStartAfterWaitsBeforeCatchingUp: a feeder started with an after
// func applies nothing until it returns (serve lets the projections
// catch up first), then catches up; an after that fails is not a
// stopped index.
func TestStartAfterWaitsBeforeCatchingUp(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 20)
	for _, fail := range []bool{false, true} {
		x, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		entered := make(chan struct{})
		f, err := StartAfter(x, log, log.Redactor(), slog.New(slog.DiscardHandler), func(ctx context.Context) error {
			close(entered)
			<-release
			if fail {
				return errors.New("the projections stopped")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-entered:
		case <-time.After(time.Minute):
			t.Fatal("the feeder never called after")
		}
		// The feeder is inside after: nothing is applied however long it
		// waits there (2 s here: a feeder that did not wait applies the
		// first batch within milliseconds).
		wait, stop := context.WithTimeout(context.Background(), 2*time.Second)
		if err := f.WaitFor(wait, 1); err == nil {
			t.Fatal("the feeder applied an event before after returned")
		}
		stop()
		if st := f.Status(); st.Checkpoint != 0 || !st.Running {
			t.Fatalf("before after returned: %+v, want checkpoint 0 and running", st)
		}
		if n, _ := x.Count(); n != 0 {
			t.Fatalf("%d documents indexed before after returned", n)
		}
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := f.WaitFor(ctx, last); err != nil {
			t.Fatalf("after returned (failing: %v): %v", fail, err)
		}
		cancel()
		if n, _ := x.Count(); n == 0 {
			t.Fatal("caught up with no document indexed")
		}
		f.Close()
		x.Close()
	}
}

// Report says which recall ranks: words alone without an embedding
// route, words and meaning with one, and a missing key.
func TestReportNamesTheRanking(t *testing.T) {
	if got := Report(nil); len(got) != 1 || !strings.HasPrefix(got[0], "recall: BM25 (words) alone;") {
		t.Errorf("Report(nil) = %q", got)
	}
	ollama := &HTTPEmbedder{Name: "ollama:nomic-embed-text", BaseURL: "http://127.0.0.1:11434"}
	if got, want := Report(ollama), "recall: BM25 and embeddings from ollama:nomic-embed-text at http://127.0.0.1:11434 (reciprocal-rank fusion)"; len(got) != 1 || got[0] != want {
		t.Errorf("Report(ollama) = %q, want %q", got, want)
	}
	keyless := &HTTPEmbedder{Name: "openrouter:e", BaseURL: "https://x.invalid/api/v1", OpenAI: true}
	if got := Report(keyless); len(got) != 1 || !strings.HasSuffix(got[0], "falls back to BM25") {
		t.Errorf("Report(no key) = %q, want the missing key named", got)
	}
	keyless.APIKey = "k"
	if got := Report(keyless); strings.Contains(got[0], "not set") {
		t.Errorf("Report(with key) = %q", got)
	}
}
