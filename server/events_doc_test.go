package server_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
)

// TestTheMinimalPublisherOfTheEventsPageIsIndexed: the 24-line publisher
// docs/events.md shows (scripts/kvev_minimal_publisher.py, the page's copy
// checked against the file) run against a real server: its three batches
// are applied and the engine it names holds the 8 tokens the page says.
func TestTheMinimalPublisherOfTheEventsPageIsIndexed(t *testing.T) {
	pypub.Require(t)
	const script = "../scripts/kvev_minimal_publisher.py"
	code, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(page), "<!-- minimal-publisher:begin -->\n```python\n")
	block, _, _ = strings.Cut(block, "```\n<!-- minimal-publisher:end -->")
	if block != string(code) {
		t.Fatalf("docs/events.md's publisher is not %s: copy the file into the page", script)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "tcp://" + ln.Addr().String()
	ln.Close()
	base := serveEvents(t, []zmq.Source{{Name: "pod-a", Endpoint: endpoint}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, pypub.Python, script, endpoint).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	waitApplied(t, base, 3)
	var got server.ScoreResult
	if code := httpJSON(t, http.MethodPost, base+"/v1/prefix:score", `{"tokens":[1,2,3,4,5,6,7,8,9,10,11,12]}`, &got); code != http.StatusOK {
		t.Fatalf("score: %d", code)
	}
	if len(got.Engines) != 1 || got.Engines[0].Tokens != 8 || got.Engines[0].Source != "pod-a" {
		t.Errorf("engines %+v, want pod-a holding 8 tokens", got.Engines)
	}
}
