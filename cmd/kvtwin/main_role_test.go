package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// roleEnv makes the test binary play another program when re-executed
// (the usual Go pattern for testing a main and its subprocesses):
//
//   - "kvtwin" runs the command line exactly as main does, before any flag
//     parsing of `go test`, so the failure path is tested as users run it;
//   - "adapter-fast" serves fast's twins of the audited ops over exec with
//     the Go kit (package adapter);
//   - "adapter-broken" serves the same ops with a historic bug each (their
//     bug-zoo mutants): a pure op, a script op and a state-machine op;
//   - "adapter-hostile" serves them as "adapter-fast" does, except for the
//     ops KVTWIN_TEST_HOSTILE names, which break the protocol each in one
//     way (hostile_adapter_role_test.go);
//   - "adapter-declared" serves radix.script and transfer.group_contiguous
//     declared in part as KVTWIN_TEST_DECLARE says, and answers a script
//     outside the declaration as not implemented (audit_partial_test.go).
const roleEnv = "KVTWIN_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "kvtwin":
		initTestingFlags()
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	case "adapter-fast":
		os.Exit(serveAdapter(fastAdapter()))
	case "adapter-broken":
		os.Exit(serveAdapter(brokenAdapter()))
	case "adapter-messages":
		os.Exit(serveAdapter(messagesAdapter()))
	case "adapter-crash-on-garbage":
		os.Exit(crashOnGarbage(fastAdapter()))
	case "adapter-hostile":
		os.Exit(serveHostileAdapter())
	case "adapter-declared":
		os.Exit(serveAdapter(declaredAdapter()))
	}
	dir, err := os.MkdirTemp("", "kvtwin-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binDir is the folder TestMain makes for kvtwinBinary's build.
var binDir string

// kvtwinBinary builds the kvtwin binary once per test process and returns
// its path: every test that runs the real binary shares it, since each
// build links the whole program (seconds on a loaded CI machine).
var kvtwinBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "kvtwin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// builtKvtwin is kvtwinBinary for a test, which it fails when the build did.
func builtKvtwin(t *testing.T) string {
	t.Helper()
	bin, err := kvtwinBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func serveAdapter(a *adapter.Adapter) int {
	if err := a.ServeExec(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}

// auditedOps are the ops the adapters serve: a pure op, a script op and a
// state-machine op.
const auditedOps = `^(transfer\.group_contiguous|radix\.script|transfer\.per_layer_script)$`

func fastAdapter() *adapter.Adapter {
	a := adapter.New()
	lim := spec.DefaultLimits()
	adapter.Handle(a, "transfer.group_contiguous", withLimits(lim, fast.TransferGroupContiguous))
	adapter.Handle(a, "radix.script", withLimits(lim, fast.RadixScript))
	adapter.Handle(a, "transfer.per_layer_script", withLimits(lim, fast.TransferPerLayerScript))
	return a
}

func brokenAdapter() *adapter.Adapter {
	a := adapter.New()
	lim := spec.DefaultLimits()
	adapter.Handle(a, "transfer.group_contiguous", withLimits(lim, mutantFn[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput](mutants.GroupLengthMismatch())))
	adapter.Handle(a, "radix.script", withLimits(lim, mutantFn[spec.RadixScriptInput, spec.RadixScriptOutput](mutants.RadixStoredKeyViews())))
	adapter.Handle(a, "transfer.per_layer_script", withLimits(lim, mutantFn[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput](mutants.FinishRequiresAllLayers())))
	return a
}

// crashOnGarbage serves a the way a hasty Python adapter does: it answers
// requests, and a line that is not one kills it with a traceback on stderr
// (the rule docs/adapters.md states is to skip such lines).
func crashOnGarbage(a *adapter.Adapter) int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, adapter.MaxLineBytes)
	for sc.Scan() {
		var req struct {
			ID *uint64         `json:"id"`
			Op string          `json:"op"`
			In json.RawMessage `json:"in"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.ID == nil {
			fmt.Fprintf(os.Stderr, "Traceback (most recent call last):\n  File \"adapter.py\", line 12, in <module>\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n")
			return 1
		}
		out, errObj := a.Call(req.Op, req.In)
		reply := map[string]any{"id": *req.ID, "out": out}
		if errObj != nil {
			reply = map[string]any{"id": *req.ID, "err": errObj}
		}
		b, _ := json.Marshal(reply)
		fmt.Println(string(b))
	}
	return 0
}

// messagesAdapter serves hicache.layer_done_script with every state and
// error code right but every error object in its own words: a rejected
// script's and each rejected step's message replaced, its value and bound
// left out, as an engine's adapter written from the spec would answer.
func messagesAdapter() *adapter.Adapter {
	a := adapter.New()
	lim := spec.DefaultLimits()
	adapter.Handle(a, "hicache.layer_done_script", func(in spec.HiCacheLayerDoneScriptInput) (json.RawMessage, error) {
		out, err := fast.HiCacheLayerDoneScript(lim, in)
		if err != nil {
			return nil, &adapter.Reject{Code: spec.ErrorObjectOf(err).Code, Message: "rejected by the engine"}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		return json.Marshal(ownWords(v))
	})
	return a
}

// ownWords rewrites every error object in v (code and message present):
// the message is the adapter's own, value and bound are left out.
func ownWords(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["code"].(string); ok {
			if _, ok := x["message"].(string); ok {
				delete(x, "value")
				delete(x, "bound")
				x["message"] = "rejected by the engine"
				return x
			}
		}
		for k, e := range x {
			x[k] = ownWords(e)
		}
	case []any:
		for i, e := range x {
			x[i] = ownWords(e)
		}
	}
	return v
}

func withLimits[In, Out any](lim spec.Limits, f catalog.Func[In, Out]) func(In) (Out, error) {
	return func(in In) (Out, error) { return f(lim, in) }
}

func mutantFn[In, Out any](k equiv.Killable) catalog.Func[In, Out] {
	return k.(*equiv.Mutant[In, Out]).Fn
}
