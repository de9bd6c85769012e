package loop

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	crewimage "github.com/my-agent-crew/crew/tools/image"
)

// Attachments (R-LLM-3, seed 000 §3 step 1): the files an owner's message
// came with reach the turn's model as images when the route can see
// (models.<route>.vision, or one of the agent's vision_routes), else as
// their paths with a note. A message with attachments and no words reads
// "[photo: inbox/…]", never as an empty message. Images go with the
// messages of the open run only: older ones are named, so the prefix does
// not carry every photo of the day.

// attachedText is what the model reads for a message of text with files.
func attachedText(text string, files []string) string {
	if strings.TrimSpace(text) != "" || len(files) == 0 {
		return text
	}
	lines := make([]string, len(files))
	for i, f := range files {
		kind := "file"
		if crewimage.IsImage(f) {
			kind = "photo"
		}
		lines[i] = fmt.Sprintf("[%s: %s]", kind, f)
	}
	return strings.Join(lines, "\n")
}

// sees: the route's model accepts images.
func (t *Turn) sees(route string) bool {
	return t.spec(route).Vision || slices.Contains(t.agent.VisionRoutes, route)
}

// withAttachments adds to msgs (toLLM of view, system first) the
// attachments of the open run's owner messages: image parts when vision,
// else a note naming them.
func (t *Turn) withAttachments(msgs []llm.Message, view []viewed, runFrom int, vision bool) []llm.Message {
	var out []llm.Message
	for i, v := range view {
		if v.Role != RoleUser || len(v.Attachments) == 0 || v.cut {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		mc := llm.Message{Role: msgs[i+1].Role, Parts: slices.Clone(msgs[i+1].Parts)}
		var notes []string
		for _, f := range v.Attachments {
			switch {
			case !crewimage.IsImage(f):
				notes = append(notes, fmt.Sprintf("%s is attached in your workspace (read it with pdf_read or workspace_read)", f))
			case v.at < runFrom:
				notes = append(notes, fmt.Sprintf("%s was attached earlier (in your workspace)", f))
			case !vision:
				notes = append(notes, fmt.Sprintf("%s is attached, but %s", f, t.blind()))
			default:
				url, err := t.attachmentURL(f)
				if err != nil {
					notes = append(notes, fmt.Sprintf("%s is attached but could not be read: %v", f, err))
					continue
				}
				mc.Parts = append(mc.Parts, llm.Part{ImageURL: url})
			}
		}
		if len(notes) > 0 {
			mc.Parts = append(mc.Parts, llm.Part{Text: "\n[" + strings.Join(notes, "; ") + "]"})
		}
		out[i+1] = mc
	}
	if out == nil {
		return msgs
	}
	return out
}

// blind says why a request carries no image: no model of the agent can
// see (no vision_routes), or its vision routes failed this call.
func (t *Turn) blind() string {
	switch {
	case len(t.agent.VisionRoutes) == 0:
		return "this agent cannot see images: its model cannot, and its agent.yaml sets no vision_routes. Tell the owner so plainly; do not guess what the image shows"
	case slices.Contains(t.agent.Tools, ImageReadTool):
		return "this model cannot see images: call image_read with this path to have it described"
	}
	return "this model cannot see images"
}

// seeing is the step's routes (R-LLM-3, issue 29 item 5): when its request
// carries an image (an owner's photo of the open run, a newest tool
// result's image) and the first route cannot see, this call goes to the
// agent's vision_routes first — recorded as a route_fallback with reason
// vision — and then, should they all fail, to the routes it had (the
// image named instead). Nothing is kept: the next call without an image
// starts on the agent's routes again.
func (c *stepCall) seeing(ctx context.Context, routes []string) ([]string, error) {
	t := c.t
	if len(t.agent.VisionRoutes) == 0 || t.sees(routes[0]) || c.imageCount(c.view()) == 0 {
		return routes, nil
	}
	to := t.agent.VisionRoutes[0]
	if err := t.emit(ctx, &events.RouteFallback{RunID: c.s.openRun, Step: c.step, From: routes[0], To: to, Reason: events.FallbackVision}); err != nil {
		return nil, err
	}
	out := slices.Clone(t.agent.VisionRoutes)
	for _, r := range routes {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// attachmentURL is a workspace image, prepared, as a data URL. Prepared
// images are kept by path, size and time (in the Convs' attachment cache),
// so a run's steps scale each photo once.
func (t *Turn) attachmentURL(rel string) (string, error) {
	abs, err := tools.Resolve(t.agent.Workspace, rel)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano())
	cache := &t.conv.convs.prepared
	if url, ok := cache.get(key); ok {
		return url, nil
	}
	if fi.Size() > crewimage.MaxBytes {
		return "", fmt.Errorf("%d bytes, over the %d MiB limit", fi.Size(), crewimage.MaxBytes>>20)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	p, err := crewimage.Prepare(data)
	if err != nil {
		return "", err
	}
	url := p.DataURL()
	cache.put(key, url)
	return url, nil
}

// The attachment cache's bounds: entries, and bytes of data URLs (a
// photo prepared is up to a few hundred KiB, a screenshot's PNG a few MiB).
const (
	maxPrepared      = 32
	maxPreparedBytes = 16 << 20
)

// preparedImages are prepared attachments as data URLs by path, size and
// time: at most maxPrepared of them and maxPreparedBytes in all, the
// oldest let go first. One per Convs.
type preparedImages struct {
	mu    sync.Mutex
	urls  map[string]string
	order []string // keys, oldest first
	bytes int
}

func (c *preparedImages) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	url, ok := c.urls[key]
	return url, ok
}

func (c *preparedImages) put(key, url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.urls[key]; ok || len(url) > maxPreparedBytes {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= maxPrepared || c.bytes+len(url) > maxPreparedBytes) {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.urls[old])
		delete(c.urls, old)
	}
	if c.urls == nil {
		c.urls = map[string]string{}
	}
	c.urls[key] = url
	c.order = append(c.order, key)
	c.bytes += len(url)
}

// size is how many attachments are kept and their bytes.
func (c *preparedImages) size() (n, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.urls), c.bytes
}
