package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"
)

// MaxLineBytes bounds one request line or body the adapter reads.
const MaxLineBytes = 64 << 20

// lineBound is MaxLineBytes, or the smaller bound a test of this package
// set (export_test.go), so that an oversized line costs a test kilobytes.
func (a *Adapter) lineBound() int {
	if a.maxLineBytes > 0 {
		return a.maxLineBytes
	}
	return MaxLineBytes
}

// ServeExec answers requests read from r as JSON Lines on w
// (docs/adapters.md "exec:") until r ends or ctx is done. Calls run
// concurrently (GOMAXPROCS at a time) and replies go out as they finish.
// A line that is not a request (not JSON, not an object, no positive
// integer id, no op) or is longer than MaxLineBytes is logged to the
// standard logger and skipped: without an id it cannot be answered, and
// the calls before and after it are answered as if it were not there.
// ServeExec returns when every call it started has replied.
func (a *Adapter) ServeExec(ctx context.Context, r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	var wmu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := semaphore.NewWeighted(int64(runtime.GOMAXPROCS(0)))
	var werr error
	for {
		line, skipped, rerr := readLine(br, a.lineBound())
		if skipped > 0 {
			log.Printf("adapter: skipping a line of %d bytes, over MaxLineBytes (%d)", skipped, a.lineBound())
		}
		if id, op, in, ok := parseRequest(line); ok {
			if err := sem.Acquire(ctx, 1); err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer sem.Release(1)
				reply := replyLine(id, a, op, in)
				wmu.Lock()
				defer wmu.Unlock()
				if werr == nil {
					if _, werr = bw.Write(reply); werr == nil {
						werr = bw.Flush()
					}
				}
			}()
		}
		if rerr != nil {
			wg.Wait()
			if werr != nil {
				return fmt.Errorf("write reply: %w", werr)
			}
			if rerr == io.EOF {
				return nil
			}
			return rerr
		}
	}
}

// readLine reads one line, its newline dropped, of at most max bytes. A
// longer line is read to its end and dropped: line is nil and skipped is
// its length. err is io.EOF after the last line.
func readLine(br *bufio.Reader, max int) (line []byte, skipped int, err error) {
	n := 0
	for {
		chunk, err := br.ReadSlice('\n') // a chunk is valid until the next read: append copies it
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		if n += len(body); n <= max {
			line = append(line, body...)
		} else {
			line = nil
		}
		if err != bufio.ErrBufferFull {
			if n > max {
				return nil, n, err
			}
			return line, 0, err
		}
	}
}

// parseRequest decodes one line as a request; ok is false for a line that
// is not one (docs/adapters.md: skipped without a reply), and for a line
// that holds only spaces.
func parseRequest(line []byte) (id uint64, op string, in json.RawMessage, ok bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return 0, "", nil, false
	}
	var req struct {
		ID *uint64         `json:"id"`
		Op string          `json:"op"`
		In json.RawMessage `json:"in"`
	}
	if err := json.Unmarshal(line, &req); err != nil || req.ID == nil || *req.ID == 0 || req.Op == "" {
		log.Printf("adapter: skipping a line that is not a request (%v): %.120s", err, line)
		return 0, "", nil, false
	}
	return *req.ID, req.Op, req.In, true
}

// replyLine is the reply to one call, newline-terminated.
func replyLine(id uint64, a *Adapter, op string, in json.RawMessage) []byte {
	out, eo := a.Call(op, in)
	var b []byte
	var err error
	if eo != nil {
		b, err = json.Marshal(struct {
			ID  uint64 `json:"id"`
			Err any    `json:"err"`
		}{id, eo})
	} else {
		b, err = json.Marshal(struct {
			ID  uint64          `json:"id"`
			Out json.RawMessage `json:"out"`
		}{id, out})
	}
	if err != nil {
		b = fmt.Appendf(nil, `{"id":%d,"err":{"code":%q,"message":%q}}`, id, CodeInternal, err.Error())
	}
	return append(b, '\n')
}

// Handler serves a over HTTP under prefix (docs/adapters.md "http://"):
// GET {prefix}/v1/ops and POST {prefix}/v1/ops/{op}.
func (a *Adapter) Handler(prefix string) http.Handler {
	prefix = strings.TrimRight(prefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, prefix+"/v1/ops")
		switch {
		case !ok:
			http.NotFound(w, r)
		case path == "" && r.Method == http.MethodGet:
			out, _ := a.Call(OpsCall, nil)
			writeJSON(w, http.StatusOK, out)
		case strings.HasPrefix(path, "/") && r.Method == http.MethodPost:
			a.serveOp(w, r, path[1:])
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

func (a *Adapter) serveOp(w http.ResponseWriter, r *http.Request, op string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(a.lineBound())+1))
	if err != nil || len(body) > a.lineBound() {
		http.Error(w, "body unreadable or over the limit", http.StatusRequestEntityTooLarge)
		return
	}
	out, eo := a.Call(op, bytes.TrimSpace(body))
	switch {
	case eo == nil:
		writeJSON(w, http.StatusOK, out)
	case eo.Code == CodeNotImplemented:
		b, _ := json.Marshal(map[string]any{"detail": eo})
		writeJSON(w, http.StatusNotFound, b)
	default:
		b, _ := json.Marshal(map[string]any{"detail": eo})
		writeJSON(w, http.StatusBadRequest, b)
	}
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
