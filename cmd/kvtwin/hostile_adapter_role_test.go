package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is the hostile adapter the TestHostileAdapter… tests audit:
// the Go kit serving fast's twins of the audited ops (fastAdapter), except
// for the ops named in hostileEnv, each of which misbehaves in one way
// (hostileBehave). The exec form is the test binary re-executed in role
// "adapter-hostile"; the HTTP form (hostileHTTPAdapter) answers the same
// ops the same way in HTTP's terms.

// hostileEnv names the misbehaving ops: "op=behaviour,op=behaviour".
// hostileBytesEnv sizes the huge reply and the stderr flood.
const (
	hostileEnv      = "KVTWIN_TEST_HOSTILE"
	hostileBytesEnv = "KVTWIN_TEST_HOSTILE_BYTES"
)

// hostileBehaviours parses hostileEnv's value.
func hostileBehaviours(spec string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(spec, ",") {
		if op, b, ok := strings.Cut(kv, "="); ok {
			out[op] = b
		}
	}
	return out
}

// hostileTarget is the --impl that runs the exec form with behaviours
// spec and size bytes.
func hostileTarget(spec string, size int64) string {
	return fmt.Sprintf("exec:env %s=adapter-hostile %s=%s %s=%d %s", roleEnv, hostileEnv, spec, hostileBytesEnv, size, os.Args[0])
}

// serveHostileAdapter is the exec form: requests one at a time, each
// answered as its op's behaviour says.
func serveHostileAdapter() int {
	behaviours := hostileBehaviours(os.Getenv(hostileEnv))
	size, _ := strconv.ParseInt(os.Getenv(hostileBytesEnv), 10, 64)
	kit := fastAdapter()
	flooded := map[string]bool{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	for sc.Scan() {
		var req struct {
			ID uint64          `json:"id"`
			Op string          `json:"op"`
			In json.RawMessage `json:"in"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		if req.Op == "kvtwin.ops" {
			ops, _ := json.Marshal(kit.Ops())
			fmt.Fprintf(w, `{"id":%d,"out":%s}`+"\n", req.ID, ops)
			w.Flush()
			continue
		}
		out, eo := kit.Call(req.Op, req.In)
		normal := func(id uint64) {
			if eo != nil {
				b, _ := json.Marshal(eo)
				fmt.Fprintf(w, `{"id":%d,"err":%s}`+"\n", id, b)
				return
			}
			fmt.Fprintf(w, `{"id":%d,"out":%s}`+"\n", id, out)
		}
		switch behaviours[req.Op] {
		case "hang":
			continue
		case "huge":
			fmt.Fprintf(w, `{"id":%d,"out":"`, req.ID)
			writeRepeated(w, 'x', size)
			w.WriteString("\"}\n")
		case "wrong-id":
			normal(req.ID + 1_000_000)
		case "twice":
			normal(req.ID)
			w.Flush()
			time.Sleep(20 * time.Millisecond)
			normal(req.ID)
		case "exit-mid":
			fmt.Fprintf(w, `{"id":%d,"out":{"ru`, req.ID)
			w.Flush()
			return 1
		case "garbage":
			w.WriteString("Traceback (most recent call last): oops\n")
		case "errstring":
			fmt.Fprintf(w, `{"id":%d,"err":"boom"}`+"\n", req.ID)
		case "utf8":
			if eo != nil {
				normal(req.ID)
				break
			}
			fmt.Fprintf(w, `{"id":%d,"out":%s}`+"\n", req.ID, withInvalidUTF8(out))
		case "flood":
			if !flooded[req.Op] {
				flooded[req.Op] = true
				floodStderr(size)
			}
			normal(req.ID)
		case "slow":
			time.Sleep(20 * time.Millisecond)
			normal(req.ID)
		default:
			normal(req.ID)
		}
		w.Flush()
	}
	return 0
}

// writeRepeated writes n bytes c to w, a MiB at a time.
func writeRepeated(w io.Writer, c byte, n int64) {
	chunk := bytes.Repeat([]byte{c}, 1<<20)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:k]); err != nil {
			return
		}
		n -= k
	}
}

// floodStderr writes n bytes of numbered lines to stderr, then
// "flood end".
func floodStderr(n int64) {
	w := bufio.NewWriterSize(os.Stderr, 1<<20)
	for i := 0; n > 0; i++ {
		line := fmt.Sprintf("adapter debug line %012d\n", i)
		n -= int64(len(line))
		w.WriteString(line)
	}
	w.WriteString("flood end\n")
	w.Flush()
}

// withInvalidUTF8 puts a member whose string is a lone 0xff byte into a
// JSON object.
func withInvalidUTF8(obj []byte) []byte {
	note := []byte("\"note\":\"\xff\"")
	if bytes.Equal(bytes.TrimSpace(obj), []byte("{}")) {
		return append(append([]byte("{"), note...), '}')
	}
	return append(append(append([]byte("{"), note...), ','), obj[1:]...)
}

// hostileHTTPAdapter is the HTTP form of the hostile adapter, for the
// behaviours HTTP can express (hang, garbage, errstring, utf8).
func hostileHTTPAdapter(t *testing.T, spec string) *httptest.Server {
	t.Helper()
	behaviours := hostileBehaviours(spec)
	kit := fastAdapter()
	handler := kit.Handler("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.URL.Path, "/v1/ops/")
		// read whole, so the server notices a client that hangs up
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch behaviours[op] {
		case "hang":
			<-r.Context().Done()
		case "garbage":
			_, _ = w.Write([]byte("Traceback (most recent call last): oops\n"))
		case "errstring":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"detail":"boom"}`))
		case "utf8":
			out, eo := kit.Call(op, body)
			if eo != nil {
				handler.ServeHTTP(w, r)
				return
			}
			_, _ = w.Write(withInvalidUTF8(out))
		default:
			handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
