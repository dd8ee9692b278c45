// Package remote reaches implementations outside this build through the
// adapter protocol of docs/adapters.md: a subprocess speaking JSON Lines
// (exec:CMD ARGS…) or an HTTP service (http://HOST:PORT[/PREFIX]). Both
// answer one op applied to one input with an output or an error object;
// everything else an adapter does (no answer, a malformed or oversized
// answer, a crash) is a *TransportError, kept apart from wrong answers.
package remote

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvtwin/kvtwin/fixtures"
)

// Impl is an implementation outside this build. Run is safe for concurrent
// use (calls are pipelined); Close ends every goroutine and process the
// Impl started.
type Impl interface {
	fixtures.Runner
	// Ops lists the ops the implementation declares (docs/adapters.md
	// "kvtwin.ops", GET /v1/ops), in its order.
	Ops() ([]string, error)
	// Name is the target the Impl was opened with.
	Name() string
	// Close releases the Impl; calls after Close fail.
	Close() error
}

// Options bound what an adapter may cost the caller.
type Options struct {
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
	// MaxReplyBytes bounds one reply line or body (default
	// DefaultMaxReplyBytes); a longer one is a transport error and is never
	// held in memory whole.
	MaxReplyBytes int64
	// Stderr receives an exec adapter's stderr as it comes (nil: dropped);
	// its last lines are kept for crash reports either way.
	Stderr io.Writer
	// Conns is how many connections an HTTP Impl keeps open (default 8).
	Conns int
	// Token, when set, is sent as "Authorization: Bearer Token" on every
	// HTTP call (a kvtwin server started with --auth-tokens). It is never
	// put in an error or a log.
	Token string
	// TLS configures https:// targets: the CAs to trust and a client
	// certificate (nil: the system's roots and none).
	TLS *tls.Config
}

// Defaults of Options.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultMaxReplyBytes = 16 << 20
)

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if o.Conns <= 0 {
		o.Conns = 8
	}
	return o
}

// ErrNotImplemented is returned by Run for an op the adapter does not
// implement (a not_implemented error object, or HTTP 404).
var ErrNotImplemented = errors.New("op not implemented by the adapter")

// TransportError is a call that got no usable answer.
type TransportError struct {
	// Op is the op called.
	Op string
	// Reason says what went wrong (timeout, crash, malformed reply, …).
	Reason string
}

func (e *TransportError) Error() string { return e.Op + ": " + e.Reason }

// Open returns the Impl a target names: "exec:CMD ARGS…" (split like a
// shell would, without running one) or an http:// or https:// base URL.
func Open(target string, o Options) (Impl, error) {
	o = o.withDefaults()
	switch {
	case strings.HasPrefix(target, "exec:"):
		return openExec(target, o)
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		return openHTTP(target, o)
	}
	return nil, fmt.Errorf("implementation %q: want ref, fast, cuda, exec:CMD ARGS… or http://HOST:PORT[/PREFIX]", target)
}

// IsTarget reports whether s names an implementation outside this build.
func IsTarget(s string) bool {
	return strings.HasPrefix(s, "exec:") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// parseOpList reads an op list: a JSON array of strings or of objects with
// a "name" member.
func parseOpList(b []byte) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("op list is not a JSON array: %w", err)
	}
	ops := make([]string, 0, len(items))
	for i, it := range items {
		var name string
		if json.Unmarshal(it, &name) != nil {
			var obj struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(it, &obj); err != nil || obj.Name == "" {
				return nil, fmt.Errorf("op list item %d is neither a name nor an object with a name: %.80s", i, it)
			}
			name = obj.Name
		}
		ops = append(ops, name)
	}
	return ops, nil
}
