package adapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func kit() *adapter.Adapter {
	a := adapter.New()
	adapter.Handle(a, "transfer.group_contiguous", func(in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		return fast.TransferGroupContiguous(spec.DefaultLimits(), in)
	})
	adapter.Handle(a, "panics", func(in struct{ N int }) (struct{}, error) {
		var xs []int
		_ = xs[in.N]
		return struct{}{}, nil
	})
	adapter.Handle(a, "rejects", func(in struct{}) (struct{}, error) {
		return struct{}{}, fmt.Errorf("wrapped: %w", &adapter.Reject{Code: "bad_cp_rank", Message: "cp_rank out of range", Field: "cp_rank", Value: 9, Bound: "< 4"})
	})
	adapter.Handle(a, "fails", func(in struct{}) (struct{}, error) { return struct{}{}, io.ErrUnexpectedEOF })
	return a
}

// TestServeExecAnswersEveryRequestByID pipelines requests (and lines that
// are not requests) and checks each reply by id: outputs, kvtwin's own
// input errors, Rejects, unmapped errors and panics, bad inputs and
// unknown ops.
func TestServeExecAnswersEveryRequestByID(t *testing.T) {
	in := strings.Join([]string{
		`{"id":1,"op":"transfer.group_contiguous","in":{"src":[1,2,3,7],"dst":[10,11,12,13]}}`,
		`{"id":2,"op":"transfer.group_contiguous","in":{"src":[1,2,3],"dst":[5,6]}}`,
		`not json`,
		`{"op":"no id"}`,
		`{"id":3,"op":"rejects","in":{}}`,
		`{"id":4,"op":"fails","in":{}}`,
		`{"id":5,"op":"panics","in":{"N":3}}`,
		`{"id":6,"op":"transfer.group_contiguous","in":{"src":"x"}}`,
		`{"id":7,"op":"cp.split","in":{}}`,
		`{"id":8,"op":"kvtwin.ops","in":{}}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := kit().ServeExec(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var r struct {
			ID  uint64          `json:"id"`
			Out json.RawMessage `json:"out"`
			Err json.RawMessage `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply is not JSON: %s", sc.Bytes())
		}
		got[r.ID] = string(r.Out) + string(r.Err)
	}
	want := map[uint64]string{
		1: `{"runs":[{"src_start":1,"dst_start":10,"count":3},{"src_start":7,"dst_start":13,"count":1}]}`,
		2: `"code":"length_mismatch"`,
		3: `{"code":"bad_cp_rank","field":"cp_rank","value":9,"bound":"\u003c 4","message":"cp_rank out of range"}`,
		4: `"code":"internal","message":"unexpected EOF"`,
		5: `"code":"internal","message":"panic: runtime error: index out of range`,
		6: `"code":"bad_json"`,
		7: `"code":"not_implemented"`,
		8: `[{"name":"fails"},{"name":"panics"},{"name":"rejects"},{"name":"transfer.group_contiguous"}]`,
	}
	ids := make([]int, 0, len(got))
	for id := range got {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	if len(got) != len(want) {
		t.Errorf("replied to ids %v, want 1..8", ids)
	}
	for id, w := range want {
		if !strings.Contains(got[id], w) {
			t.Errorf("reply %d = %s, want it to contain %s", id, got[id], w)
		}
	}
}

// Example serves one op of a Go program to `kvtwin audit --impl exec:…`.
func Example() {
	a := adapter.New()
	adapter.Handle(a, "transfer.group_contiguous", func(in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		if len(in.Src) != len(in.Dst) { // the engine's own check, mapped to kvtwin's code
			return spec.TransferGroupContiguousOutput{}, &adapter.Reject{Code: "length_mismatch", Message: "src and dst differ in length"}
		}
		return fast.TransferGroupContiguous(spec.DefaultLimits(), in) // your implementation here
	})
	req := `{"id":1,"op":"transfer.group_contiguous","in":{"src":[4,5],"dst":[9,10]}}` + "\n"
	_ = a.ServeExec(context.Background(), strings.NewReader(req), os.Stdout) // os.Stdin in a real adapter
	// Output: {"id":1,"out":{"runs":[{"src_start":4,"dst_start":9,"count":2}]}}
}

// TestDeclareListsThePartOfAScriptOpImplemented: a declared op's listing
// object carries its steps (an empty list kept: no kind at all) and
// options; an undeclared op's carries its name alone.
func TestDeclareListsThePartOfAScriptOpImplemented(t *testing.T) {
	a := kit()
	a.Declare("rejects", adapter.Declaration{Steps: []string{"create", "insert"}, Options: map[string]bool{"hashed_score": false}})
	a.Declare("fails", adapter.Declaration{Steps: []string{}})
	out, errObj := a.Call(adapter.OpsCall, json.RawMessage(`{}`))
	if errObj != nil {
		t.Fatal(errObj)
	}
	want := `[{"name":"fails","steps":[]},{"name":"panics"},` +
		`{"name":"rejects","options":{"hashed_score":false},"steps":["create","insert"]},{"name":"transfer.group_contiguous"}]`
	if string(out) != want {
		t.Errorf("kvtwin.ops = %s, want %s", out, want)
	}
}
