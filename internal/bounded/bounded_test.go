package bounded_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/internal/bounded"
)

// endless is an input that never ends: c forever (/dev/zero when c is 0).
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

func lim(line int, total int64, depth int) bounded.Limits {
	return bounded.Limits{MaxLineBytes: line, MaxBytes: total, MaxDepth: depth, LineName: "--max-line-bytes", BytesName: "--max-file-bytes"}
}

// readLines reads every line of in, returning them and the error that ended the read.
func readLines(in io.Reader, l bounded.Limits) ([]string, error) {
	rd := bounded.NewLines(in, l)
	var out []string
	for {
		b, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(b))
	}
}

// refusal asserts err is a *bounded.Error with the sentinel, line and words.
func refusal(t *testing.T, err error, sentinel error, line int, words ...string) {
	t.Helper()
	var e *bounded.Error
	if !errors.As(err, &e) || !errors.Is(err, sentinel) || e.Line != line {
		t.Fatalf("err = %v, want a %v refusal on line %d", err, sentinel, line)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %q", err, w)
		}
	}
}

// TestLinesReturnsEveryLineWithinTheBounds: lines come back without their
// '\n', a last line without one too, blank lines as they are, and a line
// longer than the read buffer whole; a line of exactly the bound passes.
func TestLinesReturnsEveryLineWithinTheBounds(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := "a\n\n{\"b\":1}\n" + long + "\nlast"
	got, err := readLines(strings.NewReader(in), lim(len(long), int64(len(in)), 8))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "", `{"b":1}`, long, "last"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %d bytes, want %d", i+1, len(got[i]), len(want[i]))
		}
	}
}

// TestLinesRefusesALineOneBytePastTheBound names the line and the bound;
// the input's size bound counts newlines, and is named where it is
// crossed.
func TestLinesRefusesALineOneBytePastTheBound(t *testing.T) {
	_, err := readLines(strings.NewReader("ok\n12345\n123456\n"), lim(5, 100, 0))
	refusal(t, err, bounded.ErrLineTooLong, 3, "longer than 5 bytes", "at most 5 bytes a line (--max-line-bytes)")

	_, err = readLines(strings.NewReader("1234\n1234\n1234\n"), lim(5, 12, 0))
	refusal(t, err, bounded.ErrTooLarge, 3, "passes 12 bytes", "at most 12 bytes in all (--max-file-bytes)")
	if _, err := readLines(strings.NewReader("1234\n1234\n12"), lim(5, 12, 0)); err != nil {
		t.Errorf("an input of exactly the size bound: %v", err)
	}
}

// TestLinesRefusesAnEndlessLineHoldingAtMostTheBound: /dev/zero as JSON
// Lines is refused on line 1 after at most the line bound (plus the read
// buffer) was allocated, not the gigabyte the reader once grew to.
func TestLinesRefusesAnEndlessLineHoldingAtMostTheBound(t *testing.T) {
	const bound = 8 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readLines(endless(0), lim(bound, 1<<40, 0))
	runtime.ReadMemStats(&after)
	refusal(t, err, bounded.ErrLineTooLong, 1, "longer than 8388608 bytes")
	if got := after.TotalAlloc - before.TotalAlloc; got > bound+1<<20 {
		t.Errorf("allocated %d bytes refusing an endless line, want <= the bound %d + 1 MiB", got, bound)
	}

	// An endless stream of short lines ends at the size bound.
	_, err = readLines(endless('\n'), lim(bound, 1<<20, 0))
	refusal(t, err, bounded.ErrTooLarge, 1<<20+1)
}

// TestLinesRefusesInvalidUTF8AndDeepNestingWithTheirLine: the offset is the
// line's; a blank line is not checked as JSON, and depth 0 checks none.
func TestLinesRefusesInvalidUTF8AndDeepNestingWithTheirLine(t *testing.T) {
	_, err := readLines(strings.NewReader("{}\n{\"a\":\"\xff\"}\n"), lim(100, 100, 8))
	refusal(t, err, bounded.ErrNotUTF8, 2, "invalid UTF-8 at byte 6", "UTF-8 text")

	deep := strings.Repeat("[", 9) + strings.Repeat("]", 9)
	_, err = readLines(strings.NewReader("\n"+deep+"\n"), lim(100, 100, 8))
	refusal(t, err, bounded.ErrTooDeep, 2, "nested deeper than 8 at byte 8", "at most 8 nested arrays and objects")
	if _, err := readLines(strings.NewReader(deep+"\nnot json\n"), lim(100, 100, 9)); err != nil {
		t.Errorf("nesting at the bound, then a line that is not JSON (the caller's to judge): %v", err)
	}
	if _, err := readLines(strings.NewReader(deep), lim(100, 100, 0)); err != nil {
		t.Errorf("depth 0 checks no JSON: %v", err)
	}
}

// TestLinesKeepsItsFirstError: after a refusal, Next returns it again
// rather than reading on from the middle of a line.
func TestLinesKeepsItsFirstError(t *testing.T) {
	rd := bounded.NewLines(strings.NewReader("123456\n1\n"), lim(5, 100, 0))
	_, err1 := rd.Next()
	_, err2 := rd.Next()
	if err1 == nil || err1 != err2 {
		t.Errorf("first %v, then %v", err1, err2)
	}
	if _, err := bounded.NewLines(strings.NewReader("x"), lim(0, 100, 0)).Next(); err == nil || !strings.Contains(err.Error(), "--max-line-bytes = 0") {
		t.Errorf("a zero line bound: %v", err)
	}
	if _, err := bounded.NewLines(strings.NewReader("x"), lim(5, 0, 0)).Next(); err == nil || !strings.Contains(err.Error(), "--max-file-bytes = 0") {
		t.Errorf("a zero size bound: %v", err)
	}
}

// TestReadAllReadsUpToTheBoundAndRefusesOneBytePast: the probe byte tells
// an input of exactly the bound from a longer one, whose refusal names the
// line the bound falls on.
func TestReadAllReadsUpToTheBoundAndRefusesOneBytePast(t *testing.T) {
	b, err := bounded.ReadAll(strings.NewReader("{\n\"a\": 1}"), lim(0, 9, 4))
	if err != nil || string(b) != "{\n\"a\": 1}" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	_, err = bounded.ReadAll(strings.NewReader("{\n\"a\": 12}"), lim(0, 9, 4))
	refusal(t, err, bounded.ErrTooLarge, 2, "passes 9 bytes", "(--max-file-bytes)")
	if b, err := bounded.ReadAll(strings.NewReader(""), lim(0, 9, 0)); err != nil || len(b) != 0 {
		t.Errorf("empty input: %q, %v", b, err)
	}
}

// TestReadAllRefusesAnEndlessInputHoldingAtMostTheBound: /dev/zero read
// whole costs the bound, not what the stream would send.
func TestReadAllRefusesAnEndlessInputHoldingAtMostTheBound(t *testing.T) {
	const bound = 8 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := bounded.ReadAll(endless(0), lim(0, bound, 0))
	runtime.ReadMemStats(&after)
	refusal(t, err, bounded.ErrTooLarge, 1)
	if got := after.TotalAlloc - before.TotalAlloc; got > bound+1<<20 {
		t.Errorf("allocated %d bytes refusing an endless input, want <= the bound %d + 1 MiB", got, bound)
	}
}

// TestReadAllRefusesInvalidUTF8AndDeepNestingWithTheirLine: the line is
// counted from the document's start.
func TestReadAllRefusesInvalidUTF8AndDeepNestingWithTheirLine(t *testing.T) {
	_, err := bounded.ReadAll(strings.NewReader("a: 1\nb: \xc3\x28\n"), lim(0, 100, 0))
	refusal(t, err, bounded.ErrNotUTF8, 2, "invalid UTF-8 at byte 8")
	_, err = bounded.ReadAll(strings.NewReader("{\"a\":\n[[[1]]]}"), lim(0, 100, 3))
	refusal(t, err, bounded.ErrTooDeep, 2, "nested deeper than 3")
	if _, err := bounded.ReadAll(strings.NewReader("a: [[[1]]]"), lim(0, 100, 0)); err != nil {
		t.Errorf("depth 0 (YAML) checks no JSON: %v", err)
	}
}

// TestReadFileSizesARegularFileBeforeReadingIt: a file of exactly the bound
// is read; a larger one is refused from its size (naming the line where
// the bound falls); a directory and a missing file are errors naming the
// path.
func TestReadFileSizesARegularFileBeforeReadingIt(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f.json")
	if err := os.WriteFile(f, []byte("[1,\n2,\n3]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := bounded.ReadFile(f, lim(0, 9, 2)); err != nil || string(b) != "[1,\n2,\n3]" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	_, err := bounded.ReadFile(f, lim(0, 5, 2))
	refusal(t, err, bounded.ErrTooLarge, 2, f+": line 2")

	for _, p := range []string{dir, filepath.Join(dir, "missing")} {
		if _, err := bounded.ReadFile(p, lim(0, 9, 0)); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadFile(%s): %v, want an error naming it", p, err)
		}
	}
	if _, err := bounded.Open(dir); !errors.Is(err, bounded.ErrNotAFile) {
		t.Errorf("Open(dir): %v", err)
	}
}

// TestReadFileReadsAFIFOInPieces: a FIFO has no size; it is read in pieces
// up to the bound and refused past it.
func TestReadFileReadsAFIFOInPieces(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	body := bytes.Repeat([]byte("0123456789\n"), 300_000) // 3.3 MB: several pieces
	for _, c := range []struct {
		bound int64
		ok    bool
	}{{int64(len(body)), true}, {int64(len(body)) - 1, false}} {
		done := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				_, err = w.Write(body)
				w.Close()
			}
			done <- err
		}()
		b, err := bounded.ReadFile(fifo, lim(0, c.bound, 0))
		if c.ok && (err != nil || !bytes.Equal(b, body)) {
			t.Errorf("bound %d: %d bytes, %v", c.bound, len(b), err)
		}
		if !c.ok {
			refusal(t, err, bounded.ErrTooLarge, 300_000)
		}
		// The writer ends once the reader closes (EPIPE when refused).
		<-done
	}
}

func listLim(lists map[string]int) bounded.Limits {
	return bounded.Limits{MaxBytes: 1 << 30, MaxDepth: 64, Lists: lists}
}

// TestListsBoundTheValuesAtAPathAllOccurrencesTogether: the failures of
// every row count against one bound, which is named with its path and the
// line where it is passed; a document within every bound is returned.
func TestListsBoundTheValuesAtAPathAllOccurrencesTogether(t *testing.T) {
	doc := "{\"ops\": [{\"failures\": [1, 2]},\n{\"failures\": [3], \"x\": [4, 5, 6]}]}"
	if _, err := bounded.ReadAll(strings.NewReader(doc), listLim(map[string]int{"ops[].failures[]": 3, "ops[]": 2})); err != nil {
		t.Fatalf("within the bounds: %v", err)
	}
	_, err := bounded.ReadAll(strings.NewReader(doc), listLim(map[string]int{"ops[].failures[]": 2}))
	refusal(t, err, bounded.ErrTooMany, 2, "more than 2 values at ops[].failures[]", "at most 2")

	for _, c := range []struct {
		doc   string
		lists map[string]int
	}{
		{`[1, 2, 3]`, map[string]int{"[]": 2}},
		{`{"ni": {"a": [1], "b": [2, 3]}}`, map[string]int{"ni.*": 1}},
		{`{"ni": {"a": [1], "b": [2, 3]}}`, map[string]int{"ni.*[]": 2}},
	} {
		if _, err := bounded.ReadAll(strings.NewReader(c.doc), listLim(c.lists)); !errors.Is(err, bounded.ErrTooMany) {
			t.Errorf("%s under %v: %v, want ErrTooMany", c.doc, c.lists, err)
		}
	}
}

// TestListsMatchMemberNamesAsTheDecoderDoes: encoding/json decodes "OPS"
// and "op\u0073" into the field ops, so the bound counts them too.
func TestListsMatchMemberNamesAsTheDecoderDoes(t *testing.T) {
	for _, doc := range []string{`{"OPS": [1, 2, 3]}`, `{"op\u0073": [1, 2, 3]}`, `{"ops": [1], "Ops": [2, 3]}`} {
		var decoded struct {
			Ops []int `json:"ops"`
		}
		if err := json.Unmarshal([]byte(doc), &decoded); err != nil || len(decoded.Ops) == 0 {
			t.Fatalf("the decoder does not read %s into ops: %v", doc, err)
		}
		if _, err := bounded.ReadAll(strings.NewReader(doc), listLim(map[string]int{"ops[]": 2})); !errors.Is(err, bounded.ErrTooMany) {
			t.Errorf("%s: %v, want ErrTooMany", doc, err)
		}
	}
}

// TestListsRefuseAMillionEmptyRowsWithoutDecodingThem: 3 MB of `{},` would
// decode to hundreds of MB of rows; the walk refuses it allocating nothing
// beyond the document, which reading a stream holds twice (its pieces and
// their join).
func TestListsRefuseAMillionEmptyRowsWithoutDecodingThem(t *testing.T) {
	doc := []byte(`{"ops": [` + strings.Repeat("{},", 1_000_000) + `{}]}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := bounded.ReadAll(bytes.NewReader(doc), listLim(map[string]int{"ops[]": 1 << 14}))
	runtime.ReadMemStats(&after)
	refusal(t, err, bounded.ErrTooMany, 1, "more than 16384 values at ops[]")
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*uint64(len(doc))+1<<20 {
		t.Errorf("allocated %d bytes for a %d-byte document", got, len(doc))
	}
}

// TestBinaryInputsAreBoundedButNotCheckedAsText: bytes that are not UTF-8
// pass when the input is binary; the size bound still holds, and a binary
// input cannot ask for a JSON check.
func TestBinaryInputsAreBoundedButNotCheckedAsText(t *testing.T) {
	bin := bounded.Limits{MaxBytes: 4, Binary: true}
	if b, err := bounded.ReadAll(strings.NewReader("\xff\xfe\x00"), bin); err != nil || len(b) != 3 {
		t.Errorf("binary input: %q, %v", b, err)
	}
	_, err := bounded.ReadAll(strings.NewReader("\xff\xfe\x00\x01\x02"), bin)
	refusal(t, err, bounded.ErrTooLarge, 1)
	if _, err := readLines(strings.NewReader("\xff\n\xfe"), bounded.Limits{MaxLineBytes: 4, MaxBytes: 9, Binary: true}); err != nil {
		t.Errorf("binary lines: %v", err)
	}
	if _, err := bounded.ReadAll(strings.NewReader("[]"), bounded.Limits{MaxBytes: 4, Binary: true, MaxDepth: 2}); err == nil {
		t.Error("a binary input with a JSON depth bound was read")
	}
}
