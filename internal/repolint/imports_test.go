package repolint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The import rules of docs/design/ARCHITECTURE.md, one a row. Packages are
// named relative to the module ("fast/cuda"); "x/..." is x and every package
// under it; other patterns are path.Match globs. A target outside the
// module is named in full ("testing", "pgregory.net/rapid/..."). Only
// non-test imports count (go list's Imports and Deps, never TestImports): a
// package's tests may reach further than the package. Each row's spec names
// the TestImportRules subtest that checks it; every row is checked on the
// default build and on -tags cuda.
var importRules = []rule{
	// The twins and what they stand on.
	{"RefImportsNoModulePackage", "ref", mayOnlyImport(),
		"ref is the executable specification; everything else is checked against it, so it depends on nothing of ours"},
	{"RefStandsOnTheStandardLibrary", "ref", mayOnlyImportOutside("github.com/zeebo/xxh3"),
		"the spec reads as plain Go: no codec or helper library a fast twin might share; XXH3-64 is the spec's own hash (radix-acks.md §1.14), pinned by its known answers"},
	{"LeafHelpersImportNoModulePackage", "internal/jsonscan", mayOnlyImport(),
		"the one-pass JSON scanner is shared by fast and server; a leaf keeps both free to use it"},
	{"FileReadersStandOnlyOnTheJSONGate", "internal/bounded", mayOnlyImport("internal/jsonscan"),
		"the bounded file readers are shared by every package that reads a file; the JSON depth gate is all they need"},
	{"FaultSwitchesStayInTwinsAndBugZoo", "internal/fault", mayOnlyImport("ref"),
		"fault switches are plain data naming historic bugs, and the hook table fast installs speaks ref's types; fast imports it, so it cannot import fast"},
	{"LeafHelpersImportNoModulePackage", "internal/coverreport", mayOnlyImport(),
		"the coverage report reads a profile and the source as text, so it runs whatever state the packages are in"},
	{"LeafHelpersImportNoModulePackage", "internal/repolint", mayOnlyImport(),
		"the lint package is tests only"},
	{"LeafHelpersImportNoModulePackage", "events/pypub", mayOnlyImport(),
		"the Python KV-event publisher's driver runs scripts/kvev_publisher.py as a child process; it needs nothing of ours"},
	{"LeafHelpersImportNoModulePackage", "internal/testpki", mayOnlyImport(),
		"the tests' certificate issuer is crypto/x509 and nothing of ours"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen", mayOnlyImport("internal/gen/model"),
		"the list generator reads kvtwin's source, never its packages, so it builds while the lists it writes are stale"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen/model", mayOnlyImport(),
		"the source model is shared by the generators and must build whatever state the lists are in"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen/docs", mayOnlyImport("catalog", "equiv", "equiv/mutants", "internal/gen/model"),
		"the docs generator renders the registered lists (catalog.All, mutants.All), so it runs after the list generator"},
	{"FastStandsOnlyOnRef", "fast", mayOnlyImport("ref", "internal/fault", "internal/jsonscan"),
		"the optimized twin takes and returns ref types; it never sees the catalog, the suites, the pools or the server (internal/fault holds its switches and the table its bug-zoo hooks leave through)"},
	{"CUDAStandsOnlyOnRefAndFast", "fast/cuda/...", mayOnlyImport("ref", "fast", "fast/cuda/..."),
		"the GPU twin returns ref types and borrows fast's host-side helpers (ref ← fast ← fast/cuda)"},
	{"CatalogImportsOnlyTheTwins", "catalog", mayOnlyImport("ref", "fast", "fast/cuda"),
		"the catalog is where the twins meet and are named; it knows nothing that consumes it"},

	// The adapter protocol (docs/adapters.md).
	{"AdapterKitCarriesOnlyRef", "adapter", mayOnlyImport("ref"),
		"the Go kit is what an outside Go program imports to be audited: ref's types and the protocol, nothing of the suite"},
	{"RemoteImplementationsAreReachedByBytes", "remote", mayOnlyImport("fixtures"),
		"the audit's transports move canonical bytes (fixtures.Result); what they mean is equiv's business"},

	// The consumers of the catalog.
	{"FixturesStandOnlyOnCatalog", "fixtures", mayOnlyImport("ref", "catalog", "internal/bounded"),
		"fixtures are catalog entries' canonical bytes on disk; the suite and the CLI read them, not the other way round"},
	{"EquivReachesTwinsOnlyThroughCatalog", "equiv", mayOnlyImport("ref", "catalog", "fixtures", "internal/hostile"),
		"every property runs on every implementation an entry offers; never on the server or the CLI"},
	{"MutantsAreFastTwinsWithAFaultSwitchedOn", "equiv/mutants", mayOnlyImport("ref", "fast", "equiv", "internal/fault"),
		"a mutant is the fast twin with a historic bug put back (a wrapper or a fault switch), registered against equiv's property"},
	{"ServerReachesTwinsOnlyThroughCatalog", "server", mayOnlyImport("ref", "catalog", "prefix", "events/zmq", "events/scaleout", "internal/jsonscan"),
		"the server picks a twin by catalog.Impl; the twins meet only in catalog"},
	{"ServicesStandOnlyOnTheTwins", "prefix", mayOnlyImport("ref", "fast"),
		"prefix pools wrap an injected ref.RadixTree (fast's keys); they know no catalog, HTTP or suite"},
	{"ServicesStandOnlyOnTheTwins", "events/zmq", mayOnlyImport("ref"),
		"the KV-event subscriber moves sockets' frames into an injected ref.KVEvIndex; the caller picks the twin"},
	{"ServicesStandOnlyOnTheTwins", "events/scaleout", mayOnlyImport("ref", "fast", "events/zmq"),
		"the JetStream relay runs events/zmq's subscriber into fast's index and publishes what it applies; replicas feed an injected ref.KVEvIndex"},
	{"ServicesStandOnlyOnTheTwins", "events/tracegen", mayOnlyImport("ref", "replay", "internal/bounded"),
		"the trace's KV-event stream is built from ref types and replay's trace reader; the caller picks the index"},
	{"ServicesStandOnlyOnTheTwins", "replay", mayOnlyImport("ref", "internal/bounded"),
		"trace replay reads traces into ref types; the caller picks the tree"},
	{"ServicesStandOnlyOnTheTwins", "admissiontrace", mayOnlyImport("ref", "catalog", "replay"),
		"the admission trace bench replays traces through catalog-chosen trees; a library of the CLI, not of the server"},
	{"HostileInputsAreTestMachinery", "internal/hostile", mayOnlyImport("ref", "catalog"),
		"the hostile-input generator derives bodies from catalog samples and nothing else"},

	// Who may import what.
	{"OnlyTheCLIAndTheBugZooImportEquiv", "equiv/...", onlyImportedBy("equiv/...", "cmd/kvtwin", "internal/gen/docs"),
		"the suite is test machinery; only `kvtwin audit`/`bugzoo` run it outside `go test` (and the docs generator lists its mutants)"},
	{"HostileInputsAreTestMachinery", "internal/hostile", onlyImportedBy("equiv/...", "cmd/kvtwin"),
		"the suites and `kvtwin soak` derive hostile bodies; production code never does"},
	{"PythonPublisherDriverIsTestsOnly", "events/pypub", onlyImportedBy(),
		"the driver of scripts/kvev_publisher.py exists only for events/zmq's, events/scaleout's, server's and cmd/kvtwin's tests; no package imports it outside a _test.go file"},
	{"CLIReachesTwinsOnlyThroughCatalog", "fast/...", onlyImportedBy("fast/...", "catalog", "prefix", "equiv/mutants", "events/scaleout"),
		"cmd/kvtwin, like the server, picks a twin by catalog.Impl; fast is imported only where its twins are paired (catalog), by what builds on its own types (prefix's key views, the relay's production index) and by the bug zoo"},
	{"TestCertificatesAreTestsOnly", "internal/testpki", onlyImportedBy(),
		"the certificates server's and cmd/kvtwin's TLS tests issue; no package imports the issuer outside a _test.go file"},
	{"FaultSwitchesStayInTwinsAndBugZoo", "internal/fault", onlyImportedBy("fast", "equiv/mutants"),
		"a fault re-introduces a historic bug and fault.Hooks runs fast's code with one switched on; only fast, which installs the hooks, and the bug zoo may reach them, so no production package can turn a fault on"},

	// What may be linked at all.
	{"ServerNeverLinksTestMachinery", "server", mayNotLink(testMachinery...),
		"`kvtwin serve` must not carry the suites; testing's functions panic outside `go test`"},
	{"ProductionPackagesNeverLinkTestMachinery", "ref", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "fast/...", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/fault", mayNotLink(testMachinery...), "production code: fast links it"},
	{"ProductionPackagesNeverLinkTestMachinery", "catalog", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "prefix", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "replay", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/zmq", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/tracegen", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/scaleout", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "admissiontrace", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/jsonscan", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/bounded", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "adapter", mayNotLink(testMachinery...), "production code: linked into other people's programs"},
}

// testMachinery is what production code never links: the suites, their
// libraries and the standard testing package.
var testMachinery = []string{
	"equiv/...", "internal/hostile", "events/pypub", "internal/testpki", "testing",
	"pgregory.net/rapid/...", "github.com/google/go-cmp/...",
	"github.com/cockroachdb/datadriven/...", "go.uber.org/goleak/...",
}

// TestImportRules checks every row of importRules, one subtest per spec:
// go test -run 'ImportRules/ServerNeverLinks' ./internal/repolint.
func TestImportRules(t *testing.T) {
	graphs := loadGraphs(t)
	var specs []string
	for _, r := range importRules {
		if !slices.Contains(specs, r.spec) {
			specs = append(specs, r.spec)
		}
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			for _, r := range importRules {
				if r.spec == spec {
					checkRule(t, graphs, r)
				}
			}
		})
	}
}

// TestImportGraphIsPlausible guards the rules against passing vacuously: the
// graph must load without errors on every build and hold the arrows every
// rule above presumes.
func TestImportGraphIsPlausible(t *testing.T) {
	for _, g := range loadGraphs(t) {
		for _, p := range g.local {
			if e := g.pkgs[p].Error; e != nil {
				t.Errorf("%s: %s does not load: %s", g.build, g.rel(p), e.Err)
			}
		}
		if n := len(g.local); n < 15 {
			t.Errorf("%s: only %d module packages loaded, want at least 15", g.build, n)
		}
		for _, want := range [][2]string{
			{"catalog", "ref"}, {"catalog", "fast"}, {"catalog", "fast/cuda"}, {"fast", "ref"},
			{"server", "catalog"}, {"cmd/kvtwin", "server"}, {"cmd/kvtwin", "equiv"},
			{"fast", "internal/fault"}, {"equiv/mutants", "internal/fault"}, {"internal/fault", "ref"},
		} {
			from, ok := g.pkgs[g.abs(want[0])]
			if !ok {
				t.Errorf("%s: package %s missing from the graph", g.build, want[0])
				continue
			}
			if !slices.Contains(from.Imports, g.abs(want[1])) {
				t.Errorf("%s: %s does not import %s; the graph is not the one the rules describe", g.build, want[0], want[1])
			}
		}
		if srv, ok := g.pkgs[g.abs("server")]; ok && !slices.Contains(srv.Deps, "net/http") {
			t.Errorf("%s: server's Deps lack net/http: transitive deps did not load", g.build)
		}
	}
}

// TestImportRulesNameRealPackages keeps the table honest: every rule's
// package pattern names at least one package of the module, so a rename
// cannot silently turn a rule into one about nothing.
func TestImportRulesNameRealPackages(t *testing.T) {
	g := loadGraphs(t)[0]
	for _, r := range importRules {
		if !slices.ContainsFunc(g.local, func(p string) bool { return match(r.pkg, g.rel(p)) }) {
			t.Errorf("rule %q (%s) names no package of the module", r, r.spec)
		}
	}
}

// --- the rules' mechanics ---

type ruleKind int

const (
	kindMayOnlyImport        ruleKind = iota // pkg's module imports all match targets
	kindOnlyImportedBy                       // every module importer of pkg matches targets
	kindMayNotLink                           // no transitive dependency of pkg matches targets
	kindMayOnlyImportOutside                 // pkg's imports from outside the module are standard or match targets
)

type constraint struct {
	kind    ruleKind
	targets []string
}

func mayOnlyImport(pkgs ...string) constraint  { return constraint{kindMayOnlyImport, pkgs} }
func onlyImportedBy(pkgs ...string) constraint { return constraint{kindOnlyImportedBy, pkgs} }
func mayNotLink(pkgs ...string) constraint     { return constraint{kindMayNotLink, pkgs} }

// mayOnlyImportOutside: outside the module, pkg imports the standard library
// and the named packages only.
func mayOnlyImportOutside(pkgs ...string) constraint {
	return constraint{kindMayOnlyImportOutside, pkgs}
}

type rule struct {
	spec string // the TestImportRules subtest that checks this row
	pkg  string // the package(s) the rule is about
	constraint
	why string
}

func (r rule) String() string {
	list := strings.Join(r.targets, ", ")
	switch r.kind {
	case kindMayOnlyImport:
		if list == "" {
			return r.pkg + " imports no module package"
		}
		return r.pkg + " may only import " + list
	case kindOnlyImportedBy:
		if list == "" {
			return r.pkg + " may only be imported by tests"
		}
		return r.pkg + " may only be imported by " + list
	case kindMayOnlyImportOutside:
		if list == "" {
			return r.pkg + " imports only the standard library"
		}
		return r.pkg + " imports only the standard library and " + list
	default:
		return r.pkg + " may not link " + list
	}
}

// match reports whether the module-relative (or, outside the module, full)
// import path p matches pat.
func match(pat, p string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	ok, _ := path.Match(pat, p)
	return ok
}

func matchAny(pats []string, p string) bool {
	return slices.ContainsFunc(pats, func(pat string) bool { return match(pat, p) })
}

// checkRule reports each violation of r once, with the builds it shows in.
func checkRule(t *testing.T, graphs []*graph, r rule) {
	t.Helper()
	var order []string
	builds := map[string][]string{} // violation → builds it shows in
	for _, g := range graphs {
		for _, v := range violations(g, r) {
			if builds[v] == nil {
				order = append(order, v)
			}
			builds[v] = append(builds[v], g.build)
		}
	}
	for _, v := range order {
		t.Errorf("%s [%s]\n\tbreaks rule %q: %s", v, strings.Join(builds[v], ", "), r, r.why)
	}
}

// violations lists r's violations in g, each naming the importing and the
// imported package.
func violations(g *graph, r rule) []string {
	var out []string
	for _, p := range g.local {
		rp := g.rel(p)
		info := g.pkgs[p]
		switch r.kind {
		case kindMayOnlyImport:
			if !match(r.pkg, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.isLocal(imp) && !matchAny(r.targets, g.rel(imp)) {
					out = append(out, fmt.Sprintf("%s imports %s", rp, g.rel(imp)))
				}
			}
		case kindMayOnlyImportOutside:
			if !match(r.pkg, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.isLocal(imp) || matchAny(r.targets, imp) {
					continue
				}
				if dep, ok := g.pkgs[imp]; !ok || !dep.Standard {
					out = append(out, fmt.Sprintf("%s imports %s", rp, imp))
				}
			}
		case kindOnlyImportedBy:
			if match(r.pkg, rp) || matchAny(r.targets, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.isLocal(imp) && match(r.pkg, g.rel(imp)) {
					out = append(out, fmt.Sprintf("%s imports %s", rp, g.rel(imp)))
				}
			}
		case kindMayNotLink:
			if !match(r.pkg, rp) {
				continue
			}
			for _, dep := range info.Deps {
				if !matchAny(r.targets, g.rel(dep)) {
					continue
				}
				// Name only where the chain first enters forbidden ground
				// (equiv, not also the go-cmp it drags in).
				chain := g.chain(p, dep)
				if slices.ContainsFunc(chain[1:len(chain)-1], func(q string) bool { return matchAny(r.targets, q) }) {
					continue
				}
				out = append(out, fmt.Sprintf("%s links %s via %s", rp, g.rel(dep), strings.Join(chain, " → ")))
			}
		}
	}
	return out
}

// --- the import graph, from go list ---

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Module     *struct {
		Path string
		Main bool
	}
	Error    *struct{ Err string }
	Standard bool // part of the standard library
}

type graph struct {
	build string // "default" or "-tags cuda"
	mod   string // the module path
	pkgs  map[string]*listedPackage
	local []string // the module's packages, sorted
}

func (g *graph) isLocal(p string) bool { return p == g.mod || strings.HasPrefix(p, g.mod+"/") }

func (g *graph) rel(p string) string {
	if g.isLocal(p) {
		return strings.TrimPrefix(strings.TrimPrefix(p, g.mod), "/")
	}
	return p
}

func (g *graph) abs(rel string) string { return g.mod + "/" + rel }

// chain is a shortest import chain from -> … -> to, module-relative.
func (g *graph) chain(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append(c, g.rel(p))
			}
			slices.Reverse(c)
			return c
		}
		if info, ok := g.pkgs[p]; ok {
			for _, imp := range info.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	return []string{g.rel(from), "?", g.rel(to)}
}

var graphs = sync.OnceValues(func() ([]*graph, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	var gs []*graph
	for _, b := range []struct {
		build string
		args  []string
		env   []string
	}{
		{"default", nil, nil},
		// The GPU build needs cgo; go list needs no C compiler for it.
		{"-tags cuda", []string{"-tags", "cuda"}, []string{"CGO_ENABLED=1"}},
	} {
		g, err := loadGraph(root, b.build, b.args, b.env)
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
})

func loadGraphs(t *testing.T) []*graph {
	t.Helper()
	gs, err := graphs()
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func moduleRoot() (string, error) {
	out, err := goCmd("", nil, "env", "GOMOD")
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

func loadGraph(root, build string, args, env []string) (*graph, error) {
	list := append([]string{"list", "-e", "-deps", "-json=ImportPath,Imports,Deps,Module,Error,Standard"}, args...)
	out, err := goCmd(root, env, append(list, "./...")...)
	if err != nil {
		return nil, err
	}
	g := &graph{build: build, pkgs: map[string]*listedPackage{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list (%s): %v", build, err)
		}
		g.pkgs[p.ImportPath] = &p
		if p.Module != nil && p.Module.Main {
			g.mod = p.Module.Path
			g.local = append(g.local, p.ImportPath)
		}
	}
	if g.mod == "" {
		return nil, fmt.Errorf("go list (%s) in %s: no package of the main module", build, root)
	}
	slices.Sort(g.local)
	return g, nil
}

func goCmd(dir string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
