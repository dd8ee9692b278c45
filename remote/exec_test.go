package remote

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// roleEnv makes the test binary play a (mostly hostile) exec adapter when
// re-executed; each role answers the protocol in one wrong way.
const roleEnv = "KVTWIN_REMOTE_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(playAdapter(role))
	}
	goleak.VerifyTestMain(m)
}

// playAdapter answers requests on stdin as role says.
func playAdapter(role string) int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for sc.Scan() {
		var req struct {
			ID uint64          `json:"id"`
			Op string          `json:"op"`
			In json.RawMessage `json:"in"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		switch {
		case req.Op == "kvtwin.ops":
			fmt.Fprintf(w, `{"id":%d,"out":[{"name":"echo"},"other"]}`+"\n", req.ID)
		case role == "echo" || req.Op == "echo":
			fmt.Fprintf(w, `{"id":%d,"out":%s}`+"\n", req.ID, req.In)
		case req.Op == "reject":
			fmt.Fprintf(w, `{"id":%d,"err":{"code":"bad_cp_rank","message":"no"}}`+"\n", req.ID)
		case req.Op == "missing":
			fmt.Fprintf(w, `{"id":%d,"err":{"code":"not_implemented","message":"no"}}`+"\n", req.ID)
		case req.Op == "garbage":
			fmt.Fprintln(w, "Traceback (most recent call last): oops")
		case req.Op == "wrong-id":
			fmt.Fprintf(w, `{"id":%d,"out":{}}`+"\n", req.ID+1000)
		case req.Op == "twice":
			fmt.Fprintf(w, `{"id":%d,"out":{}}`+"\n", req.ID)
			w.Flush()
			time.Sleep(50 * time.Millisecond) // the first reply is delivered alone
			fmt.Fprintf(w, `{"id":%d,"out":{}}`+"\n", req.ID)
		case req.Op == "utf8":
			fmt.Fprintf(w, "{\"id\":%d,\"out\":{\"s\":\"\xff\"}}\n", req.ID)
		case req.Op == "errstring":
			fmt.Fprintf(w, `{"id":%d,"err":"boom"}`+"\n", req.ID)
		case req.Op == "neither":
			fmt.Fprintf(w, `{"id":%d}`+"\n", req.ID)
		case req.Op == "midline":
			fmt.Fprintf(w, `{"id":%d,"out":{"a":`, req.ID)
			w.Flush()
			os.Exit(0)
		case req.Op == "flood":
			flood(req.In)
			fmt.Fprintf(w, `{"id":%d,"out":{}}`+"\n", req.ID)
		case req.Op == "silent":
		case req.Op == "huge":
			w.WriteString(`{"id":1,"out":"`)
			for range 64 {
				w.WriteString(strings.Repeat("x", 1<<20))
				w.Flush()
			}
			w.WriteString("\"}\n")
		case req.Op == "crash":
			fmt.Fprintln(os.Stderr, "adapter: about to crash on purpose")
			os.Exit(3)
		}
		w.Flush()
	}
	return 0
}

// flood writes {"bytes":N} bytes of numbered stderr lines, the last of
// them "flood end".
func flood(in json.RawMessage) {
	var n struct {
		Bytes int `json:"bytes"`
	}
	_ = json.Unmarshal(in, &n)
	w := bufio.NewWriterSize(os.Stderr, 64<<10)
	for i := 0; n.Bytes > 0; i++ {
		line := fmt.Sprintf("stderr line %09d\n", i)
		n.Bytes -= len(line)
		w.WriteString(line)
	}
	w.WriteString("flood end\n")
	w.Flush()
}

// roleCommand runs this test binary as the adapter role play. GORACE
// drops the race detector's one-second sleep at exit, which a -race run
// would otherwise pay on every adapter process that exits.
func roleCommand() string {
	return "env GORACE=atexit_sleep_ms=0 " + roleEnv + "=play " + os.Args[0]
}

func openRole(t *testing.T, o Options) Impl {
	t.Helper()
	r, err := Open("exec:"+roleCommand(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestExecRoundTripsOutputsRejectionsAndTheOpList(t *testing.T) {
	r := openRole(t, Options{})
	ops, err := r.Ops()
	if err != nil || strings.Join(Names(ops), ",") != "echo,other" {
		t.Fatalf("Ops() = %v, %v; want [echo other]", ops, err)
	}
	res, err := r.Run("echo", []byte(`{"a":[1,2]}`))
	if err != nil || string(res.Bytes) != `{"a":[1,2]}` || res.Rejected {
		t.Errorf("echo = %+v, %v", res, err)
	}
	res, err = r.Run("reject", []byte(`{}`))
	if err != nil || !res.Rejected || !strings.Contains(string(res.Bytes), "bad_cp_rank") {
		t.Errorf("reject = %+v, %v", res, err)
	}
	if _, err := r.Run("missing", []byte(`{}`)); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("missing: err %v, want ErrNotImplemented", err)
	}
}

func TestExecPipelinesConcurrentCalls(t *testing.T) {
	r := openRole(t, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Sprintf(`{"i":%d}`, i)
			res, err := r.Run("echo", []byte(in))
			if err != nil || string(res.Bytes) != in {
				errs <- fmt.Errorf("call %d: %+v, %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestExecReportsHostileRepliesAsTransportErrorsAndRecovers: each way of
// breaking the protocol is a *TransportError naming what happened, within
// the timeout and with bounded memory, and the next call gets a fresh
// adapter.
func TestExecReportsHostileRepliesAsTransportErrorsAndRecovers(t *testing.T) {
	r := openRole(t, Options{Timeout: 2 * time.Second, MaxReplyBytes: 1 << 20})
	for _, c := range []struct {
		op   string
		kind Kind
		want string
	}{
		{"garbage", KindMalformed, "reply line is not JSON"},
		{"wrong-id", KindProtocol, "which is not in flight"},
		{"silent", KindTimeout, "no reply within 2s"},
		{"huge", KindTooLarge, "exceeds 1048576 bytes"},
		{"crash", KindExited, `adapter exited (exit status 3); last stderr line: "adapter: about to crash on purpose"`},
		{"midline", KindExited, "stdout ended mid-reply"},
	} {
		start := time.Now()
		_, err := r.Run(c.op, []byte(`{}`))
		var te *TransportError
		if !errors.As(err, &te) || te.Kind != c.kind || !strings.Contains(te.Reason, c.want) {
			t.Errorf("%s: err %v, want a %s TransportError containing %q", c.op, err, c.kind, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %s", c.op, d)
		}
		if res, err := r.Run("echo", []byte(`{"ok":1}`)); err != nil || string(res.Bytes) != `{"ok":1}` {
			t.Errorf("after %s the adapter did not recover: %+v, %v", c.op, res, err)
		}
	}
}

func TestExecOpenFailsForAMissingCommand(t *testing.T) {
	if _, err := Open("exec:/nonexistent/adapter --flag", Options{}); err == nil || !strings.Contains(err.Error(), "/nonexistent/adapter") {
		t.Errorf("Open of a missing command: %v", err)
	}
	if _, err := Open("exec:", Options{}); err == nil {
		t.Error("Open(exec:) succeeded")
	}
	if _, err := Open("tcp://x", Options{}); err == nil || !strings.Contains(err.Error(), "exec:CMD") {
		t.Errorf("Open(tcp://x): %v", err)
	}
}
