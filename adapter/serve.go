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

// ServeExec answers requests read from r as JSON Lines on w
// (docs/adapters.md "exec:") until r ends or ctx is done. Calls run
// concurrently (GOMAXPROCS at a time) and replies go out as they finish.
// A line that is not a request is logged to the standard logger and
// skipped: without an id it cannot be answered. ServeExec returns when
// every call it started has replied.
func (a *Adapter) ServeExec(ctx context.Context, r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	bw := bufio.NewWriter(w)
	var wmu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := semaphore.NewWeighted(int64(runtime.GOMAXPROCS(0)))
	var werr error
	for sc.Scan() {
		var req struct {
			ID *uint64         `json:"id"`
			Op string          `json:"op"`
			In json.RawMessage `json:"in"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.ID == nil || req.Op == "" {
			log.Printf("adapter: skipping a line that is not a request (%v): %.120s", err, sc.Bytes())
			continue
		}
		if err := sem.Acquire(ctx, 1); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sem.Release(1)
			line := replyLine(*req.ID, a, req.Op, req.In)
			wmu.Lock()
			defer wmu.Unlock()
			if werr == nil {
				if _, werr = bw.Write(line); werr == nil {
					werr = bw.Flush()
				}
			}
		}()
	}
	wg.Wait()
	if werr != nil {
		return fmt.Errorf("write reply: %w", werr)
	}
	return sc.Err()
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
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxLineBytes+1))
	if err != nil || len(body) > MaxLineBytes {
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
