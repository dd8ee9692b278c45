package replay

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/spec"
)

// valid is a well-formed line: 2 blocks, the last holding 1 token.
const valid = `{"timestamp": 5, "input_length": 513, "output_length": 7, "hash_ids": [0, 1]}`

func TestReadSampleKeepsEveryLineInOrder(t *testing.T) {
	reqs := readSample(t)
	if len(reqs) != 500 {
		t.Fatalf("%d requests, want 500", len(reqs))
	}
	want := Request{Timestamp: 0, InputLength: 6758, OutputLength: 500,
		HashIDs: []spec.Unit{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}}
	if diff := cmp.Diff(want, reqs[0]); diff != "" {
		t.Errorf("first request (-want +got):\n%s", diff)
	}
}

func TestReadAcceptsLastBlocksOfOneTo512Tokens(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [9]}
{"timestamp": 0, "input_length": 512, "output_length": 0, "hash_ids": [9]}
{"timestamp": 1, "input_length": 513, "output_length": 0, "hash_ids": [9, 4294967295]}
{"timestamp": 2, "input_length": 1024, "output_length": 0, "hash_ids": [9, 10]}
`
	reqs, err := Read(strings.NewReader(in), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{blockLen(reqs[0], 0), blockLen(reqs[1], 0), blockLen(reqs[2], 1), blockLen(reqs[3], 1)}; !cmp.Equal(got, []int{1, 512, 1, 512}) {
		t.Errorf("last blocks hold %v tokens, want [1 512 1 512]", got)
	}
}

func TestReadOfNothingIsAnEmptyTrace(t *testing.T) {
	reqs, err := Read(strings.NewReader(""), DefaultLimits())
	if err != nil || len(reqs) != 0 {
		t.Errorf("Read(\"\") = %v, %v; want no requests, no error", reqs, err)
	}
}

// TestReadRejectsBadLines is the reader's bad-input table: each trace has
// one bad line, and the error names its line, field and sentinel.
func TestReadRejectsBadLines(t *testing.T) {
	small := DefaultLimits()
	small.MaxLineBytes, small.MaxRequests, small.MaxTotalBlocks = 100, 2, 3
	few := DefaultLimits()
	few.MaxRequests = 2
	for _, tc := range []struct {
		name, trace string
		lim         Limits
		line        int
		sentinel    *spec.Sentinel
		field       string
	}{
		{"negative input_length", `{"timestamp": 0, "input_length": -1, "output_length": 0, "hash_ids": []}`, Limits{}, 1, spec.ErrNegative, "input_length"},
		{"zero input_length", `{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": []}`, Limits{}, 1, ErrInconsistentLength, "input_length"},
		{"absurd input_length", `{"timestamp": 0, "input_length": 9000000000, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, spec.ErrTooLarge, "input_length"},
		{"negative output_length", `{"timestamp": 0, "input_length": 1, "output_length": -3, "hash_ids": [1]}`, Limits{}, 1, spec.ErrNegative, "output_length"},
		{"absurd output_length", `{"timestamp": 0, "input_length": 1, "output_length": 3000000, "hash_ids": [1]}`, Limits{}, 1, spec.ErrTooLarge, "output_length"},
		{"negative timestamp", `{"timestamp": -1, "input_length": 1, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, spec.ErrNegative, "timestamp"},
		{"absurd timestamp", `{"timestamp": 9007199254740993, "input_length": 1, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, spec.ErrTooLarge, "timestamp"},
		{"decreasing timestamp", valid + "\n" + `{"timestamp": 4, "input_length": 1, "output_length": 0, "hash_ids": [1]}`, Limits{}, 2, ErrOutOfOrder, "timestamp"},
		{"too few hash ids", `{"timestamp": 0, "input_length": 1025, "output_length": 0, "hash_ids": [1, 2]}`, Limits{}, 1, ErrInconsistentLength, "len(hash_ids)"},
		{"empty last block", `{"timestamp": 0, "input_length": 512, "output_length": 0, "hash_ids": [1, 2]}`, Limits{}, 1, ErrInconsistentLength, "len(hash_ids)"},
		{"no hash ids", `{"timestamp": 0, "input_length": 10, "output_length": 0, "hash_ids": []}`, Limits{}, 1, ErrInconsistentLength, "len(hash_ids)"},
		{"negative hash id", `{"timestamp": 0, "input_length": 600, "output_length": 0, "hash_ids": [1, -2]}`, Limits{}, 1, spec.ErrNegative, "hash_ids[1]"},
		{"hash id over 32 bits", `{"timestamp": 0, "input_length": 600, "output_length": 0, "hash_ids": [4294967296, 2]}`, Limits{}, 1, spec.ErrTooLarge, "hash_ids[0]"},
		{"missing field", `{"timestamp": 0, "input_length": 1, "hash_ids": [1]}`, Limits{}, 1, ErrMissingField, "output_length"},
		{"null hash_ids", `{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": null}`, Limits{}, 1, ErrMissingField, "hash_ids"},
		{"unknown field", `{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [1], "prompt": "hi"}`, Limits{}, 1, ErrMalformedLine, "line"},
		{"fractional length", `{"timestamp": 0, "input_length": 1.5, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, ErrMalformedLine, "input_length"},
		{"length beyond int64", `{"timestamp": 0, "input_length": 1e30, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, ErrMalformedLine, "input_length"},
		{"string timestamp", `{"timestamp": "0", "input_length": 1, "output_length": 0, "hash_ids": [1]}`, Limits{}, 1, ErrMalformedLine, "timestamp"},
		{"not an object", `[1, 2]`, Limits{}, 1, ErrMalformedLine, "line"},
		{"not JSON", valid + "\nhello", Limits{}, 2, ErrMalformedLine, "line"},
		{"two objects on a line", valid + valid, Limits{}, 1, ErrMalformedLine, "line"},
		{"blank line", valid + "\n\n" + valid, Limits{}, 2, ErrMalformedLine, "line"},
		{"line too long", valid + "\n" + `{"timestamp": 9, "input_length": 1, "output_length": 0, "hash_ids": [1]}` + strings.Repeat(" ", 100), small, 2, spec.ErrTooLarge, "line"},
		{"too many requests", valid + "\n" + valid + "\n" + valid, few, 3, spec.ErrTooLarge, "requests"},
		{"too many blocks in all", valid + "\n" + valid, small, 2, spec.ErrTooLarge, "hash_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim
			if lim == (Limits{}) {
				lim = DefaultLimits()
			}
			reqs, err := Read(strings.NewReader(tc.trace), lim)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Read = %d requests, %v; want a *LineError", len(reqs), err)
			}
			ie, ok := spec.AsInputError(err)
			if le.Line != tc.line || !ok || ie.Err != tc.sentinel || ie.Field != tc.field {
				t.Errorf("got %v; want line %d, field %s, sentinel %s", err, tc.line, tc.field, tc.sentinel.Code())
			}
			if ok && ie.Bound == "" {
				t.Errorf("%v names no bound", err)
			}
		})
	}
}

// TestReadRefusesTextThatIsNotUTF8OrNestedTooDeep: both are malformed
// lines, refused before decoding with the offset and the bound.
func TestReadRefusesTextThatIsNotUTF8OrNestedTooDeep(t *testing.T) {
	for _, tc := range []struct{ trace, want string }{
		{valid + "\n{\"timestamp\": 0, \"\xff\": 0}", "line 2: line = invalid UTF-8 at byte 18: want UTF-8 text"},
		{`{"hash_ids": ` + strings.Repeat("[", 16) + strings.Repeat("]", 16) + `}`, "line 1: line = JSON nested deeper than 16 at byte 28: want at most 16 nested arrays and objects"},
	} {
		_, err := Read(strings.NewReader(tc.trace), DefaultLimits())
		if ie, ok := spec.AsInputError(err); !ok || ie.Err != ErrMalformedLine || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error = %v\nwant    %s…", err, tc.want)
		}
	}
}

func TestReadErrorNamesLineFieldValueAndBound(t *testing.T) {
	_, err := Read(strings.NewReader(valid+"\n"+`{"timestamp": 6, "input_length": 1025, "output_length": 0, "hash_ids": [1, 2]}`), DefaultLimits())
	want := "line 2: len(hash_ids) = 2: want == ceil(input_length (1025) / 512) = 3: the last block holds input_length − 512·(len−1) tokens, in [1, 512] (input_length disagrees with len(hash_ids))"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestReadFileNamesThePath(t *testing.T) {
	if _, err := ReadFile("testdata/absent.jsonl", DefaultLimits()); err == nil || !strings.Contains(err.Error(), "testdata/absent.jsonl") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestFullTraceReadsCleanly(t *testing.T) {
	reqs := readFullOrSkip(t)
	total := 0
	for _, r := range reqs {
		total += r.InputLength
	}
	if len(reqs) != 12031 || total != 144793823 {
		t.Errorf("%d requests, %d input tokens; want 12031 and 144793823 (the published trace)", len(reqs), total)
	}
}
