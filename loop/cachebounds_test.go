package loop

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 30 item 2: the attachment cache (Convs.prepared) stays at its
// bounds after one use more than it holds, by count and by bytes, the
// oldest let go first and the newest kept.
func TestPreparedAttachmentsStayAtTheirBound(t *testing.T) {
	var c preparedImages
	for i := range maxPrepared + 1 {
		c.put(fmt.Sprintf("img%d", i), "data:image/png;base64,AAAA")
	}
	if n, _ := c.size(); n != maxPrepared {
		t.Errorf("%d attachments kept after %d uses, want the bound %d", n, maxPrepared+1, maxPrepared)
	}
	if _, ok := c.get("img0"); ok {
		t.Error("the oldest attachment is still kept past the bound")
	}
	if _, ok := c.get(fmt.Sprintf("img%d", maxPrepared)); !ok {
		t.Error("the newest attachment was not kept")
	}

	big := strings.Repeat("A", maxPreparedBytes/4)
	for i := range 5 {
		c.put(fmt.Sprintf("big%d", i), big)
		if _, bytes := c.size(); bytes > maxPreparedBytes {
			t.Fatalf("after %d large attachments %d bytes kept, over the bound %d", i+1, bytes, maxPreparedBytes)
		}
	}
	if _, ok := c.get("big4"); !ok {
		t.Error("the newest large attachment was not kept")
	}
	if _, ok := c.get("big0"); ok {
		t.Error("the oldest large attachment is still kept past the byte bound")
	}
	c.put("huge", strings.Repeat("A", maxPreparedBytes+1))
	if _, ok := c.get("huge"); ok {
		t.Error("an attachment larger than the whole bound was kept")
	}
}
