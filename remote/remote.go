// Package remote is the audit's transports to implementations outside this
// build, over the adapter protocol of docs/adapters.md. An adapter is a
// subprocess speaking JSON Lines (exec:CMD ARGS…) or an HTTP service
// (http://HOST:PORT[/PREFIX]). Both
// answer one op applied to one input with an output or an error object;
// everything else an adapter does (no answer, a malformed or oversized
// answer, a crash) is a *TransportError of one Kind, the same Kind over
// every transport (classify.go), kept apart from wrong answers. An op whose
// calls get no usable answer UnavailableAfter times in a row is refused
// from then on (breaker.go), and an exec adapter's stderr is kept in a
// bounded ring per process (runlog.go), never copied whole.
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
	// "kvtwin.ops", GET /v1/ops), in its order, each with the part of it
	// declared when the listing declares only part of a script op.
	Ops() ([]Listed, error)
	// Name is the target the Impl was opened with.
	Name() string
	// Unavailable reports whether op's breaker is open (Options.
	// UnavailableAfter calls in a row got no usable answer) and why; calls
	// of an unavailable op fail at once with KindUnavailable, unsent.
	Unavailable(op string) (reason string, ok bool)
	// Log is what the implementation's processes left behind: every exec
	// adapter process's end and the last RingBytes of its stderr (the
	// first and last KeptRuns/2 processes kept). Zero for HTTP. Complete
	// once Close has returned.
	Log() Log
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
	// Stderr receives one summary line per exec adapter process when it
	// ends (how it ended, the bytes and lines it wrote to stderr, its last
	// line), at most MaxSummaryLines of them (nil: none). The stream itself
	// goes into a ring of the last RingBytes per process (Log), so an
	// adapter's stderr can neither flood nor block the caller's terminal.
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
	// UnavailableAfter is how many failures in a row without a usable
	// answer (a timeout, a crash, a malformed reply; all calls one process
	// failure kills count once) make an op unavailable (default
	// DefaultUnavailableAfter; docs/adapters.md "The breaker").
	UnavailableAfter int
}

// Defaults of Options.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxReplyBytes    = 16 << 20
	DefaultUnavailableAfter = 3
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
	if o.UnavailableAfter <= 0 {
		o.UnavailableAfter = DefaultUnavailableAfter
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
	// Kind classifies what went wrong, alike over every transport.
	Kind Kind
	// Reason says what went wrong, with the evidence (the id, the bytes,
	// the status, the bound).
	Reason string
}

func (e *TransportError) Error() string { return e.Op + ": " + string(e.Kind) + ": " + e.Reason }

// KindOf is the Kind of a *TransportError in err's chain, or "" when err
// is not one.
func KindOf(err error) Kind {
	var te *TransportError
	if errors.As(err, &te) {
		return te.Kind
	}
	return ""
}

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

// Listed is one op of an implementation's op list (docs/adapters.md
// "kvtwin.ops" and "Partial declarations").
type Listed struct {
	// Name is the op's name.
	Name string
	// Steps are the step kinds the listing declares the implementation
	// supports, in its order; nil when the listing has no steps member
	// (every kind).
	Steps []string
	// Options are the options the listing names, with their values; nil
	// when it has no options member.
	Options map[string]bool
}

// Names is the names of ls, in order.
func Names(ls []Listed) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// parseOpList reads an op list: a JSON array of strings or of objects with
// a "name" member (and optionally "steps", an array of strings, and
// "options", an object of booleans; other members are ignored), checked as
// every reply is (checkJSON).
func parseOpList(b []byte) ([]Listed, error) {
	if f := checkJSON(b, "op list"); f != nil {
		return nil, f
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("op list is not a JSON array: %w", err)
	}
	ops := make([]Listed, 0, len(items))
	for i, it := range items {
		var name string
		if json.Unmarshal(it, &name) == nil {
			ops = append(ops, Listed{Name: name})
			continue
		}
		l, err := parseListed(it)
		if err != nil {
			return nil, fmt.Errorf("op list item %d: %w", i, err)
		}
		ops = append(ops, l)
	}
	return ops, nil
}

// parseListed reads one object of an op list.
func parseListed(it json.RawMessage) (Listed, error) {
	var obj struct {
		Name    string          `json:"name"`
		Steps   json.RawMessage `json:"steps"`
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(it, &obj); err != nil || obj.Name == "" {
		return Listed{}, fmt.Errorf("neither a name nor an object with a name: %.80s", it)
	}
	l := Listed{Name: obj.Name}
	if obj.Steps != nil {
		if err := json.Unmarshal(obj.Steps, &l.Steps); err != nil || l.Steps == nil {
			return Listed{}, fmt.Errorf("%s: steps %.80s: want an array of step-kind strings", obj.Name, obj.Steps)
		}
	}
	if obj.Options != nil {
		if err := json.Unmarshal(obj.Options, &l.Options); err != nil || l.Options == nil {
			return Listed{}, fmt.Errorf("%s: options %.80s: want an object of booleans, e.g. {\"hashed_score\":false}", obj.Name, obj.Options)
		}
	}
	return l, nil
}
