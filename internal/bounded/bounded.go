// Package bounded reads every file a command is handed as hostile input,
// each bound checked before the bytes past it are kept. The files are
// fixtures, traces, event streams, audit reports, JSON and YAML inputs: every
// size is checked against a bound before anything is allocated for what lies
// past it. /dev/zero, a FIFO that never ends and a 1 GiB line
// cost at most the bound, and are refused with the line (1-based) where the
// bound was crossed and the bound's name (docs/reliability.md, "Files").
//
// Two readers: Lines for JSON Lines (a bound per line and one for the whole
// input, read line by line so the caller holds one line at a time), and
// ReadAll/ReadFile for a document read whole (one bound, checked with a
// one-byte probe past it). Both refuse text that is not UTF-8 and, when a
// depth is given, JSON nested deeper than it (internal/jsonscan's gate,
// which allocates nothing and keeps a constant stack).
package bounded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/kvtwin/kvtwin/internal/jsonscan"
)

// Sentinels of the refusals, for errors.Is; the *Error carries the details.
var (
	// ErrLineTooLong: a line is longer than Limits.MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
	// ErrTooLarge: the input is longer than Limits.MaxBytes.
	ErrTooLarge = errors.New("input too large")
	// ErrNotUTF8: a line or document is not UTF-8.
	ErrNotUTF8 = errors.New("not UTF-8")
	// ErrTooDeep: JSON nested deeper than Limits.MaxDepth.
	ErrTooDeep = errors.New("JSON nested too deep")
	// ErrNotAFile: the path names a directory.
	ErrNotAFile = errors.New("not a file")
	// ErrTooMany: a document holds more values at a path than Limits.Lists allows.
	ErrTooMany = errors.New("too many values in a list")
)

// Limits bounds one input. MaxBytes must be >= 1, and MaxLineBytes too for
// Lines; MaxDepth 0 means the input is not checked as JSON (YAML, text).
type Limits struct {
	// MaxLineBytes bounds one line, its '\n' excluded (Lines only).
	MaxLineBytes int
	// MaxBytes bounds the whole input, newlines included.
	MaxBytes int64
	// MaxDepth bounds the nesting of arrays and objects of each non-blank
	// line (Lines) or of the document (ReadAll), in [1,
	// jsonscan.MaxDepthLimit]; 0 skips the JSON check.
	MaxDepth int
	// LineName and BytesName name the two bounds in messages: the flag or
	// the documented constant that sets them ("--max-line-bytes").
	LineName, BytesName string
	// Binary marks an input that is bytes, not text: no UTF-8 check (and
	// no JSON check, so MaxDepth and Lists must be unset).
	Binary bool
	// Lists bounds, for a document read whole with a MaxDepth, the values
	// at each path, all occurrences together, before anything is decoded:
	// "ops[]" is the elements of the member ops, "ops[].failures[]" those
	// of every row's failures, "not_implemented.*" the members of an
	// object, "[]" the elements of the document itself.
	Lists map[string]int
}

// Check reports limits that cannot bound anything: a non-positive byte
// bound, a negative line bound or a depth outside [0, MaxDepthLimit].
func (l Limits) Check() error {
	switch {
	case l.MaxBytes < 1:
		return fmt.Errorf("%s = %d: want >= 1", nameOr(l.BytesName, "the byte bound"), l.MaxBytes)
	case l.MaxLineBytes < 0:
		return fmt.Errorf("%s = %d: want >= 1", nameOr(l.LineName, "the line bound"), l.MaxLineBytes)
	case l.MaxDepth < 0 || l.MaxDepth > jsonscan.MaxDepthLimit:
		return fmt.Errorf("JSON depth bound %d: want 0..%d", l.MaxDepth, jsonscan.MaxDepthLimit)
	case len(l.Lists) > 0 && l.MaxDepth == 0:
		return errors.New("list bounds need a JSON depth bound")
	case l.Binary && l.MaxDepth > 0:
		return errors.New("a binary input has no JSON depth bound")
	}
	for p, n := range l.Lists {
		if n < 0 || len(parsePath(p)) == 0 {
			return fmt.Errorf("list bound %q: %d: want a path and a bound >= 0", p, n)
		}
	}
	return nil
}

func nameOr(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// Error is one refusal: the 1-based line it happened on, what was found and
// the bound it broke. Err is one of the sentinels above.
type Error struct {
	// Line is the 1-based line where the bound was crossed.
	Line int
	// Found says what the input holds there ("more than 16777216 bytes").
	Found string
	// Want states the bound, with its name ("at most 16777216 bytes a line (--max-line-bytes)").
	Want string
	// Err is the sentinel.
	Err error
}

// Error renders "line N: found: want bound".
func (e *Error) Error() string { return fmt.Sprintf("line %d: %s: want %s", e.Line, e.Found, e.Want) }

// Unwrap exposes the sentinel to errors.Is.
func (e *Error) Unwrap() error { return e.Err }

func lineTooLong(line int, lim Limits) *Error {
	return &Error{Line: line, Found: fmt.Sprintf("longer than %d bytes", lim.MaxLineBytes),
		Want: fmt.Sprintf("at most %d bytes a line (%s)", lim.MaxLineBytes, nameOr(lim.LineName, "the line bound")), Err: ErrLineTooLong}
}

func tooLarge(line int, lim Limits) *Error {
	return &Error{Line: line, Found: fmt.Sprintf("the input passes %d bytes on this line", lim.MaxBytes),
		Want: fmt.Sprintf("at most %d bytes in all (%s)", lim.MaxBytes, nameOr(lim.BytesName, "the byte bound")), Err: ErrTooLarge}
}

// checkText refuses b (line line, or a document starting on line line) when
// it is not UTF-8 or, with a depth bound, is JSON nested deeper. Other JSON
// errors are left to the caller's decoder, whose messages name fields.
func checkText(b []byte, line int, depth int) *Error {
	if !utf8.Valid(b) {
		off := firstInvalidUTF8(b)
		return &Error{Line: line + bytes.Count(b[:off], []byte{'\n'}), Found: fmt.Sprintf("invalid UTF-8 at byte %d", off),
			Want: "UTF-8 text", Err: ErrNotUTF8}
	}
	if depth == 0 || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if g := jsonscan.Check(b, depth); !g.OK() && g.Depth > 0 {
		return &Error{Line: line + bytes.Count(b[:g.Offset], []byte{'\n'}), Found: fmt.Sprintf("JSON nested deeper than %d at byte %d", depth, g.Offset),
			Want: fmt.Sprintf("at most %d nested arrays and objects", depth), Err: ErrTooDeep}
	}
	return nil
}

// firstInvalidUTF8 is the offset of b's first byte that does not start a
// valid UTF-8 sequence (len(b) when there is none).
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// readBufSize is Lines' read buffer: a line up to this size is returned
// without a copy; a longer one is gathered in pieces of this size.
const readBufSize = 64 << 10

// Lines reads JSON Lines (or any '\n'-separated text) under Limits: a line
// longer than MaxLineBytes or an input longer than MaxBytes is refused when
// its bytes arrive, before they are kept, so the memory a line takes is at
// most the line bound plus one read buffer, whatever the input. Not safe
// for concurrent use.
type Lines struct {
	br    *bufio.Reader
	lim   Limits
	line  int   // lines returned
	total int64 // bytes consumed, newlines included
	buf   []byte
	err   error
}

// NewLines returns a reader of r's lines under lim; lim is checked first
// (Limits.Check), and the error, if any, is what every Next returns.
func NewLines(r io.Reader, lim Limits) *Lines {
	l := &Lines{br: bufio.NewReaderSize(r, readBufSize), lim: lim}
	if err := lim.Check(); err != nil {
		l.err = err
	} else if lim.MaxLineBytes < 1 {
		l.err = fmt.Errorf("%s = 0: want >= 1", nameOr(lim.LineName, "the line bound"))
	}
	return l
}

// Line is the 1-based number of the line Next returned last (0 before the
// first).
func (l *Lines) Line() int { return l.line }

// Next returns the next line without its '\n' (a last line without one
// too), or io.EOF after the last. The slice is valid until the next call.
// A refusal is an *Error; an I/O error is returned wrapped with the line.
// After an error, every call returns it again.
func (l *Lines) Next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	b, err := l.read()
	if err == nil && !l.lim.Binary {
		if e := checkText(b, l.line, l.lim.MaxDepth); e != nil {
			err = e
		}
	}
	if err != nil {
		l.err = err
		return nil, err
	}
	return b, nil
}

// read gathers one line, checking both bounds on every piece before it is
// kept.
func (l *Lines) read() ([]byte, error) {
	var pieces [][]byte
	n := 0
	for {
		frag, err := l.br.ReadSlice('\n')
		l.total += int64(len(frag))
		body := frag
		if err == nil {
			body = frag[:len(frag)-1]
		}
		if n+len(body) > l.lim.MaxLineBytes {
			return nil, lineTooLong(l.line+1, l.lim)
		}
		if l.total > l.lim.MaxBytes {
			return nil, tooLarge(l.line+1, l.lim)
		}
		switch {
		case err == bufio.ErrBufferFull:
			pieces = append(pieces, bytes.Clone(body))
			n += len(body)
			continue
		case err == io.EOF && n+len(body) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("line %d: %w", l.line+1, err)
		}
		l.line++
		if pieces == nil {
			return body, nil
		}
		return l.join(pieces, body, n+len(body)), nil
	}
}

// join copies a long line's pieces into the reader's line buffer, which is
// allocated at the line's exact size when it is too small.
func (l *Lines) join(pieces [][]byte, last []byte, n int) []byte {
	if cap(l.buf) < n {
		l.buf = make([]byte, 0, n)
	}
	b := l.buf[:0]
	for _, p := range pieces {
		b = append(b, p...)
	}
	return append(b, last...)
}

// Open opens path for reading, refusing a directory (whose reads fail
// only later, with a less telling error).
func Open(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		err = fmt.Errorf("%s: %w: a directory", path, ErrNotAFile)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadAll reads r whole under lim: at most lim.MaxBytes bytes are kept, one
// more is read to tell a complete input from a longer one, and a longer
// input is refused without reading the rest. The document must be UTF-8
// and, with lim.MaxDepth, JSON nested no deeper than it, with no more
// values at a path than lim.Lists allows. lim.MaxLineBytes is not used.
func ReadAll(r io.Reader, lim Limits) ([]byte, error) {
	return readAll(r, lim, -1)
}

// ReadFile is ReadAll on the file at path, refusing a directory. A regular
// file's size is checked before its bytes are read, and its buffer is
// allocated once at that size; a FIFO or a device is read in pieces.
// Errors name path.
func ReadFile(path string, lim Limits) ([]byte, error) {
	if err := lim.Check(); err != nil {
		return nil, err
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hint := int64(-1)
	if st.Mode().IsRegular() {
		hint = st.Size()
	}
	b, err := readAll(f, lim, hint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// readAll reads at most lim.MaxBytes+1 bytes of r. hint is the input's
// size when known (a regular file), else -1.
func readAll(r io.Reader, lim Limits, hint int64) ([]byte, error) {
	if err := lim.Check(); err != nil {
		return nil, err
	}
	var pieces [][]byte
	var err error
	switch {
	case hint > lim.MaxBytes:
		// Known to be too large: only count the lines up to the bound.
		n, err := countLines(io.LimitReader(r, lim.MaxBytes))
		if err != nil {
			return nil, err
		}
		return nil, tooLarge(1+n, lim)
	case hint >= 0:
		pieces, err = readSized(r, lim.MaxBytes, hint)
	default:
		pieces, err = readPieces(r, lim.MaxBytes)
	}
	if err != nil {
		return nil, err
	}
	var total int64
	for _, p := range pieces {
		total += int64(len(p))
	}
	if total > lim.MaxBytes {
		return nil, tooLarge(1+newlinesBefore(pieces, lim.MaxBytes), lim)
	}
	b := join(pieces)
	if lim.Binary {
		return b, nil
	}
	if e := checkText(b, 1, lim.MaxDepth); e != nil {
		return nil, e
	}
	if len(lim.Lists) > 0 {
		if e := checkLists(b, lim.Lists); e != nil {
			return nil, e
		}
	}
	return b, nil
}

// newlinesBefore counts the '\n' bytes among the first n bytes of pieces.
func newlinesBefore(pieces [][]byte, n int64) int {
	c := 0
	for _, p := range pieces {
		if int64(len(p)) > n {
			p = p[:n]
		}
		c += bytes.Count(p, []byte{'\n'})
		n -= int64(len(p))
	}
	return c
}

// join returns the one piece as it is, or the pieces copied into one
// buffer of their exact size.
func join(pieces [][]byte) []byte {
	switch len(pieces) {
	case 0:
		return []byte{}
	case 1:
		return pieces[0]
	}
	return bytes.Join(pieces, nil)
}

// readSized reads an input of a known size into one buffer of that size
// plus the probe byte; an input that grew since is read on in pieces.
func readSized(r io.Reader, max, size int64) ([][]byte, error) {
	b := make([]byte, size+1)
	n, err := io.ReadFull(r, b)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return [][]byte{b[:n]}, nil
	case err != nil:
		return nil, err
	}
	// The file grew past its size: the rest, up to the bound and its probe.
	rest, err := readPieces(r, max-int64(n))
	if err != nil {
		return nil, err
	}
	return append([][]byte{b}, rest...), nil
}

// countLines counts the '\n' bytes of r through one buffer of maxPiece.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, maxPiece)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// maxPiece is the size of readPieces' buffers.
const maxPiece = 1 << 20

// readPieces reads up to max+1 bytes of r in pieces of at most maxPiece,
// so an input of unknown length never grows a buffer past what it sent.
func readPieces(r io.Reader, max int64) ([][]byte, error) {
	var pieces [][]byte
	var total int64
	for total <= max {
		p := make([]byte, min(int64(maxPiece), max+1-total))
		n, err := io.ReadFull(r, p)
		if n > 0 {
			pieces = append(pieces, p[:n])
			total += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return pieces, nil
}
