package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kvtwin/kvtwin/equiv"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"
)

// TestShardReportsMergeIntoTheVerdictOfAnUnshardedRun runs one failing
// audit whole and as three shards, merges the shard reports, and requires
// the same report: every op's verdict, case, table, mismatch and transport
// counts, and the first failures in order. Shrinking is off: rapid bounds
// a shrink by time, so its result is not a function of the flags alone
// (TestMergeKeepsTheShrinkOfTheEarliestFailure covers the choice).
func TestShardReportsMergeIntoTheVerdictOfAnUnshardedRun(t *testing.T) {
	skipUnderRace(t)
	args := []string{"audit", "--impl", selfAdapter("adapter-broken"), "--ops", `^(transfer\.group_contiguous|transfer\.per_layer_script)$`,
		"--cases", "16", "--seed", "3", "--json", "--no-progress", "--shrink=false"}
	code, out, stderr := runCLI(t, args...)
	if code != 1 {
		t.Fatalf("unsharded audit exited %d: %s", code, stderr)
	}
	whole := auditReportOf(t, out)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		code, out, stderr := runCLI(t, append(args, "--shard", []string{"0/3", "1/3", "2/3"}[i])...)
		if code != 1 && code != 0 {
			t.Fatalf("shard %d exited %d: %s", i, code, stderr)
		}
		f := filepath.Join(dir, []string{"a.json", "b.json", "c.json"}[i])
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	code, out, stderr = runCLI(t, append([]string{"audit", "merge", "--json"}, files[2], files[0], files[1])...)
	if code != 1 {
		t.Fatalf("merge exited %d, want 1 (the audit failed): %s", code, stderr)
	}
	merged := auditReportOf(t, out)
	// the adapter processes (pids, times) are each shard's own: merge keeps
	// every shard's, one adapter each here
	if d := cmp.Diff(whole, merged, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(auditReport{}, "Adapters")); d != "" {
		t.Errorf("merged shards differ from the unsharded run (-whole +merged):\n%s", d)
	}
	if len(merged.Adapters) != 3 || merged.Adapters[0].Shard+merged.Adapters[1].Shard+merged.Adapters[2].Shard != 0+1+2 {
		t.Errorf("merged report keeps %d adapter logs, want one per shard: %+v", len(merged.Adapters), merged.Adapters)
	}
	if len(whole.Ops) != 2 || whole.Ops[0].Mismatches == 0 {
		t.Errorf("the unsharded run is not the failing audit the test needs: %+v", whole.Ops)
	}

	code, _, stderr = runCLI(t, "audit", "merge", files[0], files[1])
	if code == 0 || !strings.Contains(stderr, "want all 3 shards") {
		t.Errorf("merge of 2 of 3 shards exited %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "audit", "merge", files[0], files[0], files[1])
	if code == 0 || !strings.Contains(stderr, "given twice") {
		t.Errorf("merge with a shard twice exited %d: %s", code, stderr)
	}
}

// TestMergeRejectsAShardIndexOutsideItsCount: a report is input like any
// other; an index it claims is checked before it indexes anything.
func TestMergeRejectsAShardIndexOutsideItsCount(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, idx := range []int{7, 0} {
		f := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		body := fmt.Sprintf(`{"seed":1,"cases":10,"ops":[],"mutants":[],"shard":{"index":%d,"count":2},"passed":true}`, idx)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	code, _, stderr := runCLI(t, append([]string{"audit", "merge"}, files...)...)
	if code != 2 || !strings.Contains(stderr, "shard index 7 of 2: want 0..1") {
		t.Errorf("merge of a shard 7/2 exited %d: %s", code, stderr)
	}
}

// TestShardComesFromTheFlagOrTheBatchSystem: --shard wins; otherwise a
// Kubernetes Indexed Job's or a Slurm array's variables say the shard;
// half a pair or an out-of-range index is an error naming the variable.
func TestShardComesFromTheFlagOrTheBatchSystem(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		flag string
		env  func(string) string
		want shardSpec
		err  string
	}{
		{"", env(), shardSpec{0, 1}, ""},
		{"2/5", env("JOB_COMPLETION_INDEX", "1", "JOB_COMPLETION_COUNT", "4"), shardSpec{2, 5}, ""},
		{"", env("JOB_COMPLETION_INDEX", "3", "JOB_COMPLETION_COUNT", "4"), shardSpec{3, 4}, ""},
		{"", env("SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "2"), shardSpec{0, 2}, ""},
		{"", env("JOB_COMPLETION_INDEX", "3"), shardSpec{}, "JOB_COMPLETION_COUNT"},
		{"", env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "2"), shardSpec{}, "shard index 2, want 0..1"},
		{"4/4", env(), shardSpec{}, "shard index 4"},
		{"1", env(), shardSpec{}, "want i/n"},
		{"0/0", env(), shardSpec{}, "shard count 0"},
	} {
		got, err := resolveShard(c.flag, c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("resolveShard(%q): %v, want an error containing %q", c.flag, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("resolveShard(%q) = %v, %v; want %v", c.flag, got, err, c.want)
		}
	}
}

// TestShardsPartitionTheCases: every case belongs to exactly one shard and
// the sizes add up.
func TestShardsPartitionTheCases(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		for _, cases := range []int{1, 10, 101} {
			total := 0
			for i := range n {
				s := shardSpec{i, n}
				owned := 0
				for c := range cases {
					if s.owns(c) {
						owned++
					}
				}
				if owned != s.size(cases) {
					t.Errorf("shard %d/%d owns %d of %d cases, size says %d", i, n, owned, cases, s.size(cases))
				}
				total += owned
			}
			if total != cases {
				t.Errorf("%d shards own %d of %d cases", n, total, cases)
			}
		}
	}
}

// TestHTMLReportRendersTheMatrixCounterexamplesZooAndRatios parses the
// page an audit writes: one self-contained document (no script, no
// external resource) with the op × implementation matrix, the minimal
// counterexample of a failing op, the skipped bug zoo's reason and the
// bench ratios as SVG bars.
func TestHTMLReportRendersTheMatrixCounterexamplesZooAndRatios(t *testing.T) {
	if testing.Short() {
		t.Skip("under -short rapid runs a fifth of its checks, and the in-process audit's 20 cases then need not reach the counterexample this page must show")
	}
	dir := t.TempDir()
	benchFile := filepath.Join(dir, "bench.json")
	if err := os.WriteFile(benchFile, []byte(`[
{"op":"transfer.group_contiguous","shape":"1k","impl":"ref","ns_per_op":4000},
{"op":"transfer.group_contiguous","shape":"1k","impl":"fast","ns_per_op":1000},
{"op":"transfer.group_contiguous","shape":"1k","impl":"copy","ns_per_op":500}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	code, _, stderr := runCLI(t, "audit", "--impl", selfAdapter("adapter-broken"), "--ops", `^transfer\.(group_contiguous|filter_cp_rank)$`,
		"--cases", "20", "--no-progress", "--html", page, "--bench", benchFile)
	if code != 1 {
		t.Fatalf("audit exited %d: %s", code, stderr)
	}
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var cells, svgs []string
	ids := map[string]bool{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "img", "iframe":
				t.Errorf("self-contained page has a <%s>", n.Data)
			case "td":
				cells = append(cells, textOf(n))
			case "svg":
				svgs = append(svgs, textOf(n))
			}
			for _, a := range n.Attr {
				if a.Key == "id" {
					ids[a.Val] = true
				}
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("page loads %s=%q", a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	all := strings.Join(cells, "|")
	for _, want := range []string{"transfer.group_contiguous", "mismatches", "not implemented"} {
		if !strings.Contains(all, want) {
			t.Errorf("matrix lacks %q: %s", want, all)
		}
	}
	for _, id := range []string{"matrix", "counterexamples", "op-0", "zoo", "bench"} {
		if !ids[id] {
			t.Errorf("page lacks section #%s", id)
		}
	}
	if len(svgs) != 1 || !strings.Contains(svgs[0], "4.00×") {
		t.Errorf("bench chart: %q, want one bar of 4.00×", svgs)
	}
	body, _ := os.ReadFile(page)
	for _, want := range []string{"Minimal counterexample", "fixture line", "Skipped: the bug zoo"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// TestCampaignTemplatesShardThroughTheBatchSystem keeps the documented
// Kubernetes and Slurm campaign templates runnable: the Job is Indexed and
// sets JOB_COMPLETION_COUNT to its completions, the Slurm script is valid
// bash with a 100-task array, and both run `kvtwin audit --json` without
// --shard (the batch system's variables say the shard).
func TestCampaignTemplatesShardThroughTheBatchSystem(t *testing.T) {
	raw, err := os.ReadFile("../../docs/campaigns/audit-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Kind string `yaml:"kind"`
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
						Env  []struct{ Name, Value string }
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &job); err != nil {
		t.Fatal(err)
	}
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("not an Indexed Job of one container: %+v", job)
	}
	c := job.Spec.Template.Spec.Containers[0]
	count := ""
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_COUNT" {
			count = e.Value
		}
	}
	if count != fmt.Sprint(job.Spec.Completions) {
		t.Errorf("JOB_COMPLETION_COUNT = %q, completions %d", count, job.Spec.Completions)
	}
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "kvtwin audit --impl http://") || !strings.Contains(args, "--json") || strings.Contains(args, "--shard") {
		t.Errorf("job command: %s", args)
	}

	script := "../../docs/campaigns/audit-array.slurm"
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", script, err, out)
	}
	body, _ := os.ReadFile(script)
	for _, want := range []string{"#SBATCH --array=0-99", "kvtwin audit --impl http://", "--json", "SLURM_ARRAY_TASK_ID"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("%s lacks %q", script, want)
		}
	}
}

// TestMergeKeepsTheShrinkOfTheEarliestFailure: as an unsharded run shrinks
// the kind of its first failing case, a merge keeps the shrink of the shard
// whose failing case comes first.
func TestMergeKeepsTheShrinkOfTheEarliestFailure(t *testing.T) {
	shard := func(i, from int, input string) auditReport {
		return auditReport{Seed: 1, Cases: 10, Shard: &shardSpec{i, 2}, Ops: []opResult{{
			Op: "x", Impl: "y", Cases: 5, Mismatches: 1, ShrunkFrom: from,
			Shrunk:   &equiv.Failure{Input: json.RawMessage(input)},
			Failures: []*equiv.Failure{{Case: input, Seq: from}},
		}}}
	}
	m, err := mergeReports([]auditReport{shard(1, tableSeqBase+3, `"late"`), shard(0, tableSeqBase+2, `"early"`)}, 5)
	if err != nil {
		t.Fatal(err)
	}
	o := m.Ops[0]
	if string(o.Shrunk.Input) != `"early"` || o.Cases != 10 || o.Mismatches != 2 || o.Failures[0].Case != `"early"` || m.Passed {
		t.Errorf("merged %+v", o)
	}
}

// TestFirstFailuresKeepTheEarliestWithinTheBound: however many cases fail,
// and in whatever order parallel workers report them, an op keeps the
// --max-failures failures a sequential run meets first, per class, and
// counts the rest.
func TestFirstFailuresKeepTheEarliestWithinTheBound(t *testing.T) {
	k := newFirstFailures(3)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 999 - w; i >= 0; i -= 4 {
				k.add(&equiv.Failure{Seq: tableSeqBase + i, Transport: i%10 == 0})
			}
		}()
	}
	wg.Wait()
	k.add(&equiv.Failure{Seq: 2}) // a table case
	seqs := func(fs []*equiv.Failure) []int {
		var out []int
		for _, f := range fs {
			out = append(out, f.Seq-tableSeqBase)
		}
		return out
	}
	if k.mismatches != 901 || k.transport != 100 {
		t.Errorf("counted %d mismatches, %d transport errors; want 901, 100", k.mismatches, k.transport)
	}
	if got := seqs(k.firstMismatches); !slices.Equal(got, []int{2 - tableSeqBase, 1, 2}) {
		t.Errorf("kept mismatches %v", got)
	}
	if got := seqs(k.firstTransport); !slices.Equal(got, []int{0, 10, 20}) {
		t.Errorf("kept transport errors %v", got)
	}
	if k.firstTrialMismatch == nil || k.firstTrialMismatch.Seq != tableSeqBase+1 {
		t.Errorf("first generated mismatch %+v, want case 1", k.firstTrialMismatch)
	}
}
