package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/remote"
)

// hostileLong reports whether KVTWIN_HOSTILE=long (`make hostile`) asks for
// the long forms.
func hostileLong() bool { return os.Getenv("KVTWIN_HOSTILE") == "long" }

// cut shortens s for a failure message.
func cut(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// fileCommand is a command that reads a file, and the most of a refused
// file it may hold: the line bound of a reader that reads a line at a
// time, the file bound of one that reads the file whole.
type fileCommand struct {
	name  string
	args  func(t *testing.T, path string) []string
	bound int64
	// sameReaderAs names an earlier command that reads the file with the
	// same code; the bounded form of the RSS test leaves such one out.
	sameReaderAs string
}

// fileCommands is every command of the binary that reads a file a user
// names, with the bound of what it holds, hand-derived from the docs
// (docs/fixtures.md, docs/campaigns.md, docs/replay.md, docs/admission.md,
// docs/events.md).
var fileCommands = []fileCommand{
	{name: "fixtures check", bound: 16 << 20, args: func(_ *testing.T, p string) []string { return []string{"fixtures", "check", p} }},
	{name: "audit merge", bound: 256 << 20, args: func(_ *testing.T, p string) []string { return []string{"audit", "merge", p} }},
	{name: "replay --trace", bound: 1 << 20, args: func(_ *testing.T, p string) []string {
		return []string{"replay", "--trace", p, "--capacity-tokens", "1000"}
	}},
	{name: "replay --emit-events", bound: 1 << 20, sameReaderAs: "replay --trace", args: func(t *testing.T, p string) []string {
		return []string{"replay", "--trace", p, "--emit-events", filepath.Join(t.TempDir(), "events.jsonl")}
	}},
	{name: "bench admission --trace", bound: 1 << 20, sameReaderAs: "replay --trace", args: func(_ *testing.T, p string) []string {
		return []string{"bench", "admission", "--trace", p}
	}},
	{name: "bench admission --input", bound: 64 << 20, args: func(_ *testing.T, p string) []string {
		return []string{"bench", "admission", "--input", p}
	}},
	{name: "bench events", bound: 32 << 20, args: func(_ *testing.T, p string) []string { return []string{"bench", "events", p} }},
	{name: "bench text", bound: 16 << 20, args: func(_ *testing.T, p string) []string { return []string{"bench", "text", p} }},
	{name: "serve --events-file", bound: 1 << 20, args: func(_ *testing.T, p string) []string {
		return []string{"serve", "--addr", "127.0.0.1:0", "--events-file", p}
	}},
}

// hostileFileCase is one hostile input and what its refusal must say
// besides the file's name.
type hostileFileCase struct {
	name string
	path func(t *testing.T) string
	want *regexp.Regexp
}

// malformedFiles are the inputs of issue 27's file half that cost little
// memory: invalid UTF-8, deep nesting (100,000 levels; 5 million, 10 MB,
// under KVTWIN_HOSTILE=long), a directory and a missing file.
func malformedFiles() []hostileFileCase {
	deep := 100_000
	if hostileLong() {
		deep = 5_000_000
	}
	return []hostileFileCase{
		{"invalid-utf8", func(t *testing.T) string { return writeTemp(t, "{\"a\": \"\xff\"}\n") },
			regexp.MustCompile(`line 1: .*invalid UTF-8 at byte 7.*want UTF-8`)},
		// Refused by the nesting bound, or first by a size bound the long
		// form's 10 MB pass (replay's 1 MiB lines, --events-file's 1 MiB).
		{"deep-json", func(t *testing.T) string { return writeTemp(t, strings.Repeat("[", deep)+strings.Repeat("]", deep)) },
			regexp.MustCompile(`line 1: .*(nested deeper than \d+ at byte \d+.*want at most \d+ nested|\d+ bytes.*want)`)},
		{"directory", func(t *testing.T) string { return t.TempDir() }, regexp.MustCompile(`not a file: a directory`)},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing.json") },
			regexp.MustCompile(`no such file or directory`)},
	}
}

// writeTemp writes body to a new file and returns its path.
func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostileFileEveryCommandRefusesMalformedFiles: every command that
// reads a file refuses one that is not UTF-8, nests past its bound, is a
// directory or is missing, with exit status 2 and a message naming the
// file and, where the file has lines, the line and the bound.
func TestHostileFileEveryCommandRefusesMalformedFiles(t *testing.T) {
	for _, c := range fileCommands {
		for _, h := range malformedFiles() {
			t.Run(strings.ReplaceAll(c.name, " ", "_")+"/"+h.name, func(t *testing.T) {
				p := h.path(t)
				code, _, stderr := runCLI(t, c.args(t, p)...)
				if code != 2 || !strings.Contains(stderr, p) || !h.want.MatchString(stderr) {
					t.Errorf("exit %d, stderr %q; want 2 and a message naming %s and matching %q", code, stderr, p, h.want)
				}
			})
		}
	}
}

// shardReports writes one --json report per shard of a 2-shard audit of
// 10 cases, each built by edit from a passing one, and returns the files.
func shardReports(t *testing.T, edit ...func(i int, r *auditReport)) []string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		r := auditReport{Seed: 1, Cases: 10, Passed: true, Shard: &shardSpec{Index: i, Count: 2},
			Ops: []opResult{{Op: "transfer.filter_cp_rank", Spec: "transfer.md §1", Impl: "fast", Cases: 5, Passed: true, ShrunkFrom: -1}}}
		for _, e := range edit {
			e(i, &r)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// mergeRefuses runs `audit merge --json` on files and requires exit 2 and
// a message naming the file and matching want.
func mergeRefuses(t *testing.T, files []string, file string, want string) {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"audit", "merge", "--json"}, files...)...)
	if code != 2 || !strings.Contains(stderr, file) || !strings.Contains(stderr, want) {
		t.Errorf("merge exited %d, stderr %q, stdout %s; want 2 naming %s and %q", code, stderr, cut(out), file, want)
	}
}

// TestHostileFileAuditMergeRefusesCountsThatWouldOverflow is finding 5:
// two shards whose cases sum past 2^63 merged into CASES
// -9223372036854775799. A row's cases are bounded by what its shard ran
// (5 of the 10), so the sum is never taken.
func TestHostileFileAuditMergeRefusesCountsThatWouldOverflow(t *testing.T) {
	files := shardReports(t, func(i int, r *auditReport) {
		if i == 0 {
			r.Ops[0].Cases = math.MaxInt64
		}
	})
	mergeRefuses(t, files, files[0], "ops[0] (transfer.filter_cp_rank × fast): cases = 9223372036854775807: want 0..5 (shard 0/2 of 10 cases)")
}

// TestHostileFileAuditMergeRefusesNegativeCounts is finding 5: negative
// counts were summed as they came.
func TestHostileFileAuditMergeRefusesNegativeCounts(t *testing.T) {
	for _, c := range []struct {
		edit func(o *opResult)
		want string
	}{
		{func(o *opResult) { o.Cases = -5 }, "cases = -5: want 0..5"},
		{func(o *opResult) { o.Mismatches, o.Passed = -1, false }, "mismatches = -1: want >= 0"},
		{func(o *opResult) { o.TransportErrors, o.Passed = -3, false }, "transport_errors = -3: want >= 0"},
		{func(o *opResult) { o.Tables = -2 }, "tables = -2: want 0..1048576"},
	} {
		files := shardReports(t, func(i int, r *auditReport) {
			if i == 1 {
				c.edit(&r.Ops[0])
			}
		})
		mergeRefuses(t, files, files[1], c.want)
	}
}

// TestHostileFileAuditMergeRefusesARepeatedRow is finding 5: one op row
// repeated 20,000 times merged into a pass of 100,000 cases of an audit of
// 10. So many rows are refused before decoding (16,384 at most); two are
// refused as a repeat.
func TestHostileFileAuditMergeRefusesARepeatedRow(t *testing.T) {
	for _, c := range []struct {
		copies int
		want   string
	}{
		{20_000, "line 1: more than 16384 values at ops[]: want at most 16384"},
		{2, "ops[1] (transfer.filter_cp_rank × fast): repeats ops[0]: want one row per op × implementation"},
	} {
		files := shardReports(t, func(i int, r *auditReport) {
			if i == 0 {
				for range c.copies - 1 {
					r.Ops = append(r.Ops, r.Ops[0])
				}
			}
		})
		mergeRefuses(t, files, files[0], c.want)
	}
}

// TestHostileFileAuditMergeRefusesReportsThatLie: every other field a
// report can lie in is checked against what its shard can have written,
// and the shards against each other; each refusal names the file, the row
// and the bound.
func TestHostileFileAuditMergeRefusesReportsThatLie(t *testing.T) {
	failing := func(o *opResult) { o.Mismatches, o.Passed = 1, false }
	for _, c := range []struct {
		name string
		edit func(i int, r *auditReport)
		file int
		want string
	}{
		{"a pass over a failing row", func(i int, r *auditReport) { r.Ops[0].Mismatches = i }, 1, "passed = true with 1 mismatches and 0 transport errors: want passed = false"},
		{"a report's pass over its failing row", func(i int, r *auditReport) { failing(&r.Ops[0]) }, 0, "passed = true, but ops[0] (transfer.filter_cp_rank × fast) failed"},
		{"more failures than cases", func(i int, r *auditReport) { r.Passed = false; failing(&r.Ops[0]); r.Ops[0].Mismatches = 6 }, 0, "mismatches 6 + transport_errors 0: want at most cases 5 + tables 0"},
		{"tables off shard 0", func(i int, r *auditReport) { r.Ops[0].Tables = 3 * i }, 1, "tables = 3 on shard 1: want 0 (shard 0 runs the tables)"},
		{"more failures kept than counted", func(i int, r *auditReport) {
			r.Passed = false
			failing(&r.Ops[0])
			r.Ops[0].Failures = []*equiv.Failure{{Seq: tableSeqBase}, {Seq: tableSeqBase + 1}}
		}, 0, "2 failures kept of 1 mismatches"},
		{"a failure's seq out of range", func(i int, r *auditReport) {
			r.Passed = false
			failing(&r.Ops[0])
			r.Ops[0].Failures = []*equiv.Failure{{Seq: -1}}
		}, 0, "failures[0]: seq = -1: want 0..1048585"},
		{"cases past audit's bound", func(i int, r *auditReport) { r.Cases = maxAuditCases + 1 }, 0, "cases = 100000001: want 1..100000000 (audit --cases)"},
		{"a seed past audit's bound", func(i int, r *auditReport) { r.Seed = 1<<62 + 1 }, 0, "seed = 4611686018427387905: want <= 4611686018427387904"},
		{"shard counts that differ", func(i int, r *auditReport) { r.Shard.Count += i; r.Ops[0].Cases = r.Shard.size(r.Cases) }, 1, "shard 1/3, but"},
		{"rows that differ", func(i int, r *auditReport) { r.Ops[0].Impl = []string{"fast", "ref"}[i] }, 1, "ops[0] (transfer.filter_cp_rank × ref) is not a row of"},
		{"a mutant in two shards", func(i int, r *auditReport) {
			r.Mutants = []mutantResult{{Mutant: "m", Op: "transfer.filter_cp_rank", Killed: true, RegressionKills: true}}
		}, 1, "mutant m of transfer.filter_cp_rank is also in"},
		{"a surviving mutant under a pass", func(i int, r *auditReport) {
			r.Mutants = []mutantResult{{Mutant: fmt.Sprint("m", i), Op: "transfer.filter_cp_rank", Killed: i == 0, RegressionKills: true}}
		}, 1, "passed = true, but mutants[0] (m1) survived"},
		{"negative cases not sent", func(i int, r *auditReport) { r.Ops[0].NotSent = -1 }, 0, "not_sent = -1: want 0..1048581"},
		{"cases not sent by an available op", func(i int, r *auditReport) { r.Ops[0].NotSent = 1 }, 0, "not_sent = 1 with no unavailable reason"},
		{"a pass over an unavailable op", func(i int, r *auditReport) { r.Ops[0].Unavailable = "timeout" }, 0, "passed = true, but the op is unavailable"},
		{"an adapter log of another shard", func(i int, r *auditReport) {
			r.Adapters = []adapterReport{{Impl: "exec:x", Shard: 1 - i}}
		}, 0, "adapters[0] (exec:x): shard = 1: want 0, the report's shard"},
		{"an adapter's negative stderr count", func(i int, r *auditReport) {
			r.Adapters = []adapterReport{{Impl: "exec:x", Shard: i, Log: remote.Log{Runs: 1, Kept: []remote.Run{{Run: 1, StderrBytes: -5}}}}}
		}, 0, "stderr_bytes -5, stderr_lines 0: want each >= 0"},
		{"more processes kept than ran", func(i int, r *auditReport) {
			r.Adapters = []adapterReport{{Impl: "exec:x", Shard: i, Log: remote.Log{Runs: 1, Omitted: 3}}}
		}, 0, "0 processes kept and 3 omitted of 1 runs"},
		{"a pass over an adapter that failed between calls", func(i int, r *auditReport) {
			r.Adapters = []adapterReport{{Impl: "exec:x", Shard: i, Log: remote.Log{Runs: 1, Unattributed: 2}}}
		}, 0, "passed = true, but adapters[0] (exec:x) failed outside every call 2 times"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := shardReports(t, c.edit)
			mergeRefuses(t, files, files[c.file], c.want)
		})
	}
}

// TestHostileFileAuditMergeRefusesAMissingShardListingIt: a partial
// campaign has no verdict; merge names the shards it lacks.
func TestHostileFileAuditMergeRefusesAMissingShardListingIt(t *testing.T) {
	files := shardReports(t, func(i int, r *auditReport) { r.Shard.Count = 4; r.Ops[0].Cases = r.Shard.size(r.Cases) })
	code, _, stderr := runCLI(t, "audit", "merge", files[0], files[1])
	if code != 2 || !strings.Contains(stderr, "want all 4 shards (missing: 2, 3)") {
		t.Errorf("merge of shards 0 and 1 of 4: exit %d, %s", code, stderr)
	}
}

// TestHostileFileAuditMergeRefusesListsPastTheirBounds: rows are counted
// before the report is decoded (16,384 of them; 65,536 failures).
func TestHostileFileAuditMergeRefusesListsPastTheirBounds(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"seed":1,"cases":10,"ops":[` + strings.Repeat(`{},`, 1<<14) + `{}]}`, "line 1: more than 16384 values at ops[]"},
		{`{"seed":1,"cases":10,"ops":[{"failures":[` + strings.Repeat(`{},`, 1<<16) + `{}]}]}`, "line 1: more than 65536 values at ops[].failures[]"},
		{`{"seed":1,"cases":10,"MUTANTS":[` + strings.Repeat(`{},`, 1<<14) + `{}]}`, "line 1: more than 16384 values at mutants[]"},
	} {
		p := writeTemp(t, c.body)
		mergeRefuses(t, []string{p}, p, c.want)
	}
}

// TestHostileFileAuditMergeToleratesAdditiveFields: members a later
// kvtwin adds (an adapter's stderr ring, unavailable ops) are ignored, so
// the merge of reports carrying them is the merge without them.
func TestHostileFileAuditMergeToleratesAdditiveFields(t *testing.T) {
	plain := shardReports(t)
	extended := shardReports(t)
	for _, f := range extended {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.Replace(string(b), `{"seed":1`, `{"stderr":{"exec:x":"last 64 KiB…"},"unavailable":["a.b"],"seed":1`, 1))
		b = []byte(strings.Replace(string(b), `"impl":"fast"`, `"impl":"fast","breaker_trips":2`, 1))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code1, out1, err1 := runCLI(t, append([]string{"audit", "merge", "--json"}, plain...)...)
	code2, out2, err2 := runCLI(t, append([]string{"audit", "merge", "--json"}, extended...)...)
	if code1 != 0 || code2 != 0 || out1 != out2 {
		t.Errorf("plain: exit %d %s%s\nextended: exit %d %s%s", code1, out1, err1, code2, out2, err2)
	}
}

// TestHostileFileWarmupPlanRefusesAManifestThatIsADirectory: the manifest
// is read as a file or not at all; a directory in its place is refused by
// name (a missing manifest is a cold cache, not an error).
func TestHostileFileWarmupPlanRefusesAManifestThatIsADirectory(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "sglang_warmup_manifest.json")
	if err := os.Mkdir(manifest, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "warmup-plan", "--cache-dir", dir, "--kernel", "GEMM_NT_F8F8BF16:7168:2048:1")
	if code != 2 || !strings.Contains(stderr, manifest+": not a file: a directory") {
		t.Errorf("exit %d, stderr %q; want 2 naming %s as a directory", code, stderr, manifest)
	}
}
