package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/spec"
)

// BlockTokens is the number of prompt tokens one Mooncake hash id stands
// for; a request's last block holds 1..BlockTokens of them.
const BlockTokens = 512

// MaxHashID is the largest accepted hash id. Ids are 32-bit so that
// BlockToken can map distinct ids to distinct first tokens (a bijection on
// uint32); Mooncake's remapped ids are small consecutive integers.
const MaxHashID = 1<<32 - 1

// MaxTimestamp bounds arrival times (milliseconds): the largest integer a
// JSON number (an IEEE double) holds exactly.
const MaxTimestamp = 1 << 53

// Trace-reading sentinels. Bounds that are sizes use spec.ErrTooLarge and
// negative numbers spec.ErrNegative, as everywhere in kvtwin.
var (
	// ErrMalformedLine: a line is not one JSON object of the trace schema.
	ErrMalformedLine = spec.NewSentinel("malformed_trace_line", "line is not one trace request object")
	// ErrMissingField: a required field is absent or null.
	ErrMissingField = spec.NewSentinel("missing_field", "required field is missing")
	// ErrInconsistentLength: input_length disagrees with the number of hash ids.
	ErrInconsistentLength = spec.NewSentinel("inconsistent_length", "input_length disagrees with len(hash_ids)")
	// ErrOutOfOrder: a request arrives before the one on the previous line.
	ErrOutOfOrder = spec.NewSentinel("out_of_order", "timestamps must not decrease")
)

// Request is one trace line: a prompt of InputLength tokens whose
// consecutive 512-token blocks are named by HashIDs. Equal ids at the same
// position mean the same prefix block.
type Request struct {
	// Timestamp is the arrival time in milliseconds, relative to the trace start.
	Timestamp int64 `json:"timestamp"`
	// InputLength is the prompt length in tokens.
	InputLength int `json:"input_length"`
	// OutputLength is the generated length in tokens (not replayed: the
	// trace gives no ids for generated tokens).
	OutputLength int `json:"output_length"`
	// HashIDs name the prompt's blocks, one per 512 tokens, the last one
	// covering InputLength − 512·(len−1) tokens. Each is at most MaxHashID;
	// they are Units so a blocks-mode key can view them without copying.
	HashIDs []spec.Unit `json:"hash_ids"`
}

// Limits bounds what Read accepts, so a hostile or corrupt trace fails with
// an error instead of exhausting memory. DefaultLimits is generous for real
// traces (the largest Mooncake prompt is 126,195 tokens).
type Limits struct {
	// MaxLineBytes bounds one line, newline excluded.
	MaxLineBytes int
	// MaxRequests bounds the number of lines.
	MaxRequests int
	// MaxInputLength bounds input_length in tokens (and so len(hash_ids)
	// and the token-mode key a request expands to).
	MaxInputLength int
	// MaxOutputLength bounds output_length in tokens.
	MaxOutputLength int
	// MaxTotalBlocks bounds the hash ids held for the whole trace.
	MaxTotalBlocks int
}

// DefaultLimits returns the limits the CLI and tests use: 1 MiB lines,
// 1<<20 requests, 2 Mi-token prompts and outputs, 1<<25 hash ids in all
// (256 MiB).
func DefaultLimits() Limits {
	return Limits{MaxLineBytes: 1 << 20, MaxRequests: 1 << 20, MaxInputLength: 1 << 21,
		MaxOutputLength: 1 << 21, MaxTotalBlocks: 1 << 25}
}

// LineError locates a rejected trace line; Err is a *spec.InputError naming
// the field, the value and the bound.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// Err is the rejection.
	Err error
}

// Error renders "line N: field = value: want bound (sentinel text)".
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap exposes the rejection to errors.Is and errors.As.
func (e *LineError) Unwrap() error { return e.Err }

// ReadFile reads a Mooncake JSONL trace from path (see Read); a directory
// is refused, and errors name the path.
func ReadFile(path string, lim Limits) ([]Request, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reqs, err := Read(f, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

// maxTraceDepth bounds a trace line's nesting: a line is an object of one
// array (2 levels), so anything deeper is refused before it is decoded.
const maxTraceDepth = 16

// Read parses a Mooncake JSONL trace: one object {timestamp, input_length,
// output_length, hash_ids} a line, every field required, no other field,
// timestamps non-decreasing (arrival order), each request consistent
// (CheckRequest) and everything within lim. Lines are UTF-8 and nest at
// most 16 deep. The first bad line is a *LineError; I/O errors are
// returned as they are. An empty input is an empty trace. What it holds is
// bounded by lim: at most MaxRequests requests (48 B each) and
// MaxTotalBlocks hash ids (8 B each), one line of at most MaxLineBytes at a
// time.
func Read(r io.Reader, lim Limits) ([]Request, error) {
	if lim.MaxLineBytes < 1 {
		return nil, fmt.Errorf("max_line_bytes %d: want >= 1", lim.MaxLineBytes)
	}
	lines := bounded.NewLines(r, bounded.Limits{MaxLineBytes: lim.MaxLineBytes, MaxBytes: math.MaxInt64,
		MaxDepth: maxTraceDepth, LineName: "max_line_bytes"})
	var reqs []Request
	blocks, prev := 0, int64(0)
	for {
		b, err := lines.Next()
		if err == io.EOF {
			return reqs, nil
		}
		if err != nil {
			return nil, lineError(lim, err)
		}
		line := lines.Line()
		if len(reqs) == lim.MaxRequests {
			return nil, &LineError{line, spec.Reject(spec.ErrTooLarge, "requests", len(reqs)+1, fmt.Sprintf("<= max_requests (%d)", lim.MaxRequests))}
		}
		req, err := parseLine(b, lim)
		if err == nil {
			err = CheckRequest(req, prev, lim)
		}
		if err == nil && blocks+len(req.HashIDs) > lim.MaxTotalBlocks {
			err = spec.Reject(spec.ErrTooLarge, "hash_ids", blocks+len(req.HashIDs), fmt.Sprintf("<= max_total_blocks (%d) in the whole trace", lim.MaxTotalBlocks))
		}
		if err != nil {
			return nil, &LineError{line, err}
		}
		reqs = append(reqs, req)
		blocks, prev = blocks+len(req.HashIDs), req.Timestamp
	}
}

// lineError turns a refusal of the line reader into a *LineError whose
// rejection names the line and the bound: ErrTooLarge for a line past
// MaxLineBytes, ErrMalformedLine for text that is not UTF-8 or JSON nested
// too deep. An I/O error is returned as it is.
func lineError(lim Limits, err error) error {
	var be *bounded.Error
	switch {
	case !errors.As(err, &be):
		return err
	case errors.Is(err, bounded.ErrLineTooLong):
		return &LineError{be.Line, spec.Reject(spec.ErrTooLarge, "line", fmt.Sprintf("> %d bytes", lim.MaxLineBytes), fmt.Sprintf("<= max_line_bytes (%d)", lim.MaxLineBytes))}
	}
	return &LineError{be.Line, spec.Reject(ErrMalformedLine, "line", be.Found, be.Want)}
}

// wireRequest is a trace line as written: pointers tell a missing field
// from a zero.
type wireRequest struct {
	Timestamp    *int64   `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
	HashIDs      *[]int64 `json:"hash_ids"`
}

// parseLine decodes one line into a Request, rejecting malformed JSON,
// unknown and missing fields, and numbers that do not fit the bounds
// CheckRequest then checks in context.
func parseLine(b []byte, lim Limits) (Request, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return Request{}, spec.Reject(ErrMalformedLine, "line", "empty", "one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w wireRequest
	if err := dec.Decode(&w); err != nil {
		return Request{}, jsonReject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, spec.Reject(ErrMalformedLine, "line", fmt.Sprintf("more after byte %d", dec.InputOffset()), "exactly one JSON object")
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"timestamp", w.Timestamp == nil}, {"input_length", w.InputLength == nil},
		{"output_length", w.OutputLength == nil}, {"hash_ids", w.HashIDs == nil}} {
		if f.missing {
			return Request{}, spec.Reject(ErrMissingField, f.name, "missing or null", "present")
		}
	}
	// Range-check the int64s before narrowing them, so a huge length is
	// rejected with its own value rather than wrapped.
	if err := checkRange("input_length", *w.InputLength, int64(lim.MaxInputLength), 1); err != nil {
		return Request{}, err
	}
	if err := checkRange("output_length", *w.OutputLength, int64(lim.MaxOutputLength), 0); err != nil {
		return Request{}, err
	}
	ids := make([]spec.Unit, len(*w.HashIDs))
	for i, id := range *w.HashIDs {
		if id < 0 {
			return Request{}, spec.Reject(spec.ErrNegative, spec.Idx("hash_ids", i), id, ">= 0")
		}
		if id > MaxHashID {
			return Request{}, spec.Reject(spec.ErrTooLarge, spec.Idx("hash_ids", i), id, fmt.Sprintf("<= %d (32-bit ids)", int64(MaxHashID)))
		}
		ids[i] = spec.Unit(id)
	}
	return Request{Timestamp: *w.Timestamp, InputLength: int(*w.InputLength),
		OutputLength: int(*w.OutputLength), HashIDs: ids}, nil
}

// checkRange rejects v below lo (ErrNegative when lo is 0, otherwise
// ErrInconsistentLength: a prompt has at least one token) or above hi.
func checkRange(field string, v, hi, lo int64) error {
	switch {
	case v < 0:
		return spec.Reject(spec.ErrNegative, field, v, fmt.Sprintf(">= %d", lo))
	case v < lo:
		return spec.Reject(ErrInconsistentLength, field, v, fmt.Sprintf(">= %d", lo))
	case v > hi:
		return spec.Reject(spec.ErrTooLarge, field, v, fmt.Sprintf("<= %d", hi))
	}
	return nil
}

// jsonReject turns an encoding/json error into an ErrMalformedLine
// rejection naming the field where the decoder knows it.
func jsonReject(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "line"
		}
		return spec.Reject(ErrMalformedLine, field, te.Value, "a JSON value of Go type "+te.Type.String())
	}
	return spec.Reject(ErrMalformedLine, "line", err.Error(), "one JSON object with exactly timestamp, input_length, output_length, hash_ids")
}

// CheckRequest validates one request against lim, given the previous
// request's timestamp (0 for the first): timestamp in [prev, MaxTimestamp],
// input_length in [1, MaxInputLength], output_length in [0,
// MaxOutputLength], len(hash_ids) == ceil(input_length/512) (equivalently,
// the last block holds 1..512 tokens) and every id in [0, MaxHashID]. Read
// calls it on every line; Run calls it on every request it is handed.
func CheckRequest(req Request, prev int64, lim Limits) error {
	switch {
	case req.Timestamp < 0:
		return spec.Reject(spec.ErrNegative, "timestamp", req.Timestamp, ">= 0")
	case req.Timestamp > MaxTimestamp:
		return spec.Reject(spec.ErrTooLarge, "timestamp", req.Timestamp, fmt.Sprintf("<= %d", int64(MaxTimestamp)))
	case req.Timestamp < prev:
		return spec.Reject(ErrOutOfOrder, "timestamp", req.Timestamp, fmt.Sprintf(">= the previous request's (%d)", prev))
	}
	if err := checkRange("input_length", int64(req.InputLength), int64(lim.MaxInputLength), 1); err != nil {
		return err
	}
	if err := checkRange("output_length", int64(req.OutputLength), int64(lim.MaxOutputLength), 0); err != nil {
		return err
	}
	if want := (req.InputLength + BlockTokens - 1) / BlockTokens; len(req.HashIDs) != want {
		return spec.Reject(ErrInconsistentLength, "len(hash_ids)", len(req.HashIDs),
			fmt.Sprintf("== ceil(input_length (%d) / %d) = %d: the last block holds input_length − %d·(len−1) tokens, in [1, %d]",
				req.InputLength, BlockTokens, want, BlockTokens, BlockTokens))
	}
	for i, id := range req.HashIDs {
		if id > MaxHashID {
			return spec.Reject(spec.ErrTooLarge, spec.Idx("hash_ids", i), id, fmt.Sprintf("<= %d (32-bit ids)", int64(MaxHashID)))
		}
	}
	return nil
}

// blockLen is the number of tokens block i of req holds: 512, or the rest
// of the prompt for the last block.
func blockLen(req Request, i int) int {
	if i < len(req.HashIDs)-1 {
		return BlockTokens
	}
	return req.InputLength - BlockTokens*(len(req.HashIDs)-1)
}
