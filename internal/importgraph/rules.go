package importgraph

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// importRules are the import rules between the module's packages, one a row,
// in the order docs/design/ARCHITECTURE.md shows them (rows that differ only
// in their package are adjacent, so the page can join them). Packages are
// named relative to the module ("fast/cuda"); "x/..." is x and every package
// under it; other patterns are path.Match globs. A target outside the module
// is named in full ("testing", "pgregory.net/rapid/..."). Only non-test
// imports count (go list's Imports and Deps, never TestImports): a package's
// tests may reach further than the package. Each row's Spec names the
// TestImportRules subtest of internal/repolint that checks it; every row is
// checked on the default build and on -tags cuda. The table is never
// written: Rules hands out a copy.
var importRules = []Rule{
	// The twins and what they stand on.
	{"SpecImportsNoModulePackage", "spec", mayOnlyImport(),
		"spec is the specification's vocabulary (the ops' inputs and outputs, sentinels, limits); every twin and consumer speaks it, so it depends on nothing of ours"},
	{"SpecStandsOnTheStandardLibrary", "spec", mayOnlyImportOutside(),
		"the vocabulary is plain Go data: no library a twin might compute with"},
	{"RefImportsOnlySpec", "ref", mayOnlyImport("spec"),
		"ref is the executable specification; everything else is checked against it, so it stands on the spec's vocabulary and nothing else of ours"},
	{"RefStandsOnTheStandardLibrary", "ref", mayOnlyImportOutside("github.com/zeebo/xxh3"),
		"the spec reads as plain Go: no codec or helper library a fast twin might share; XXH3-64 is the spec's own hash (radix-acks.md §1.14), pinned by its known answers"},
	{"LeafHelpersImportNoModulePackage", "internal/jsonscan", mayOnlyImport(),
		"the one-pass JSON scanner is shared by fast and server; a leaf keeps both free to use it"},
	{"LeafHelpersImportNoModulePackage", "internal/u32le", mayOnlyImport(),
		"the binary token list's widening (a vector path in assembly) is a decode helper with no twin, shared by fast's page hasher and the server; a leaf keeps both free to use it"},
	{"FileReadersStandOnlyOnTheJSONGate", "internal/bounded", mayOnlyImport("internal/jsonscan"),
		"the bounded file readers are shared by every package that reads a file; the JSON depth gate is all they need"},
	{"FaultSwitchesStayInTwinsAndBugZoo", "internal/fault", mayOnlyImport("spec"),
		"fault switches are plain data naming historic bugs, and the hook table fast installs speaks spec's types; fast imports it, so it cannot import fast"},
	{"LeafHelpersImportNoModulePackage", "internal/coverreport", mayOnlyImport(),
		"the coverage report reads a profile and the source as text, so it runs whatever state the packages are in"},
	{"LeafHelpersImportNoModulePackage", "internal/repolint", mayOnlyImport(),
		"the lint package is tests only"},
	{"LeafHelpersImportNoModulePackage", "events/pypub", mayOnlyImport(),
		"the Python KV-event publisher's driver runs scripts/kvev_publisher.py as a child process; it needs nothing of ours"},
	{"LeafHelpersImportNoModulePackage", "internal/testpki", mayOnlyImport(),
		"the tests' certificate issuer is crypto/x509 and nothing of ours"},
	{"LeafHelpersImportNoModulePackage", "internal/importgraph", mayOnlyImport(),
		"the import graph and these rules are read by repolint's tests and the docs generator; as a leaf it loads whatever state the packages are in"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen", mayOnlyImport("internal/gen/model"),
		"the list generator reads kvtwin's source, never its packages, so it builds while the lists it writes are stale"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen/model", mayOnlyImport(),
		"the source model is shared by the generators and must build whatever state the lists are in"},
	{"GeneratorBuildsWhileListsAreStale", "internal/gen/docs", mayOnlyImport("catalog", "equiv", "equiv/mutants", "internal/gen/model", "internal/importgraph"),
		"the docs generator renders the registered lists (catalog.All, mutants.All), so it runs after the list generator; it draws the architecture page from internal/importgraph, and the errors page from the source of spec, ref and catalog, loaded with go/packages"},
	{"FastStandsOnlyOnRef", "fast", mayOnlyImport("spec", "ref", "internal/fault", "internal/jsonscan", "internal/u32le"),
		"the optimized twin takes and returns spec types and calls ref's validators for identical errors; it never sees the catalog, the suites, the pools or the server (internal/fault holds its switches and the table its bug-zoo hooks leave through; internal/u32le widens the binary prompts its page hasher decodes)"},
	{"CUDAStandsOnlyOnRefAndFast", "fast/cuda/...", mayOnlyImport("spec", "ref", "fast", "fast/cuda/..."),
		"the GPU twin returns spec types and borrows fast's host-side helpers (spec ← ref ← fast ← fast/cuda)"},
	{"CatalogImportsOnlyTheTwins", "catalog", mayOnlyImport("spec", "ref", "fast", "fast/cuda"),
		"the catalog is where the twins meet and are named; it knows nothing that consumes it"},

	// The adapter protocol (docs/adapters.md).
	{"AdapterKitCarriesOnlySpec", "adapter", mayOnlyImport("spec"),
		"the Go kit is what an outside Go program imports to be audited: spec's types and the protocol, not even the reference, nothing of the suite"},
	{"RemoteImplementationsAreReachedByBytes", "remote", mayOnlyImport("fixtures"),
		"the audit's transports move canonical bytes (fixtures.Result); what they mean is equiv's business"},

	// The consumers of the catalog.
	{"FixturesStandOnlyOnCatalog", "fixtures", mayOnlyImport("spec", "catalog", "internal/bounded"),
		"fixtures are catalog entries' canonical bytes on disk; the suite and the CLI read them, not the other way round"},
	{"EquivReachesTwinsOnlyThroughCatalog", "equiv", mayOnlyImport("spec", "ref", "catalog", "fixtures", "internal/hostile"),
		"every property runs on every implementation an entry offers; never on the server or the CLI"},
	{"MutantsAreFastTwinsWithAFaultSwitchedOn", "equiv/mutants", mayOnlyImport("spec", "ref", "fast", "equiv", "internal/fault"),
		"a mutant is the fast twin with a historic bug put back (a wrapper or a fault switch), registered against equiv's property"},
	{"ServerReachesTwinsOnlyThroughCatalog", "server", mayOnlyImport("spec", "ref", "catalog", "fixtures", "prefix", "events/zmq", "events/scaleout", "internal/jsonscan", "internal/u32le"),
		"the server picks a twin by catalog.Impl; the twins meet only in catalog (serve --verify writes what it finds as fixture lines)"},
	{"ServicesStandOnlyOnTheTwins", "prefix", mayOnlyImport("spec", "ref", "fast"),
		"prefix pools wrap an injected spec.RadixTree (fast's keys); they know no catalog, HTTP or suite"},
	{"ServicesStandOnlyOnTheTwins", "events/zmq", mayOnlyImport("spec"),
		"the KV-event subscriber moves sockets' frames into an injected spec.KVEvIndex; the caller picks the twin"},
	{"ServicesStandOnlyOnTheTwins", "events/scaleout", mayOnlyImport("spec", "events/zmq"),
		"the JetStream relay runs events/zmq's subscriber into an injected index (kvtwin events relay passes catalog.KVEvIndex(catalog.Fast)) and publishes what it applies; replicas feed an injected spec.KVEvIndex"},
	{"ServicesStandOnlyOnTheTwins", "events/tracegen", mayOnlyImport("spec", "ref", "replay", "internal/bounded"),
		"the trace's KV-event stream is built from spec types and replay's trace reader; the caller picks the index"},
	{"ServicesStandOnlyOnTheTwins", "replay", mayOnlyImport("spec", "internal/bounded"),
		"trace replay reads traces into spec types; the caller picks the tree"},
	{"ServicesStandOnlyOnTheTwins", "admissiontrace", mayOnlyImport("spec", "ref", "catalog", "replay"),
		"the admission trace bench replays traces through catalog-chosen trees; a library of the CLI, not of the server"},
	{"HostileInputsAreTestMachinery", "internal/hostile", mayOnlyImport("spec", "catalog"),
		"the hostile-input generator derives bodies from catalog samples and nothing else"},

	// Who may import what.
	{"OnlyTheCLIAndTheBugZooImportEquiv", "equiv/...", onlyImportedBy("equiv/...", "cmd/kvtwin", "internal/gen/docs"),
		"the suite is test machinery; only `kvtwin audit`/`bugzoo` run it outside `go test` (and the docs generator lists its mutants)"},
	{"HostileInputsAreTestMachinery", "internal/hostile", onlyImportedBy("equiv/...", "cmd/kvtwin"),
		"the suites and `kvtwin soak` derive hostile bodies; production code never does"},
	{"PythonPublisherDriverIsTestsOnly", "events/pypub", onlyImportedBy(),
		"the driver of scripts/kvev_publisher.py exists only for events/zmq's, events/scaleout's, server's and cmd/kvtwin's tests; no package imports it outside a _test.go file"},
	{"FastIsImportedOnlyWhereTwinsArePaired", "fast/...", onlyImportedBy("fast/...", "catalog", "prefix", "equiv/mutants"),
		"every consumer picks a twin by catalog.Impl; fast is imported only where its twins are paired (catalog), by what builds on its own types (prefix's key views), by its GPU twin and by the bug zoo"},
	{"CLIReachesTwinsOnlyThroughCatalog", "cmd/...", mayNotImport("fast/..."),
		"every command, like the server, picks a twin by catalog.Impl (catalog.KVEvIndex, catalog.RadixTree, an Entry's Run), so a command cannot pair twins differently from the suite and the fixtures"},
	{"TestCertificatesAreTestsOnly", "internal/testpki", onlyImportedBy(),
		"the certificates server's and cmd/kvtwin's TLS tests issue; no package imports the issuer outside a _test.go file"},
	{"FaultSwitchesStayInTwinsAndBugZoo", "internal/fault", onlyImportedBy("fast", "equiv/mutants"),
		"a fault re-introduces a historic bug and fault.Hooks runs fast's code with one switched on; only fast, which installs the hooks, and the bug zoo may reach them, so no production package can turn a fault on"},

	// What may be linked at all.
	{"ServerNeverLinksTestMachinery", "server", mayNotLink(serverTestMachinery()...),
		"`kvtwin serve` must not carry the suites; testing's functions panic outside `go test`"},
	{"ProductionPackagesNeverLinkTestMachinery", "spec", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "ref", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "fast/...", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "catalog", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "prefix", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "replay", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/zmq", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/tracegen", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "events/scaleout", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "admissiontrace", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/jsonscan", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/bounded", mayNotLink(testMachinery...), "production code"},
	{"ProductionPackagesNeverLinkTestMachinery", "internal/fault", mayNotLink(testMachinery...), "production code: fast links it"},
	{"ProductionPackagesNeverLinkTestMachinery", "adapter", mayNotLink(testMachinery...), "production code: linked into other people's programs"},
}

// Rules returns the import rules (importRules), a copy the caller may
// change.
func Rules() []Rule {
	out := make([]Rule, len(importRules))
	for i, r := range importRules {
		r.Targets = slices.Clone(r.Targets)
		out[i] = r
	}
	return out
}

// TestMachinery is what production code never links: the suites, their
// libraries and the standard testing package.
func TestMachinery() []string { return slices.Clone(testMachinery) }

var testMachinery = []string{
	"equiv/...", "internal/hostile", "events/pypub", "internal/testpki", "testing",
	"pgregory.net/rapid/...", "github.com/google/go-cmp/...",
	"github.com/cockroachdb/datadriven/...", "go.uber.org/goleak/...",
	"github.com/miekg/dns/...",
}

// serverTestMachinery is testMachinery less go-cmp: serve --verify writes
// each divergence as a fixture line with fixtures.DiffJSON's diff, as the
// issue that asked for it says, and that diff compares decoded JSON values
// (maps, slices, strings, numbers), on which go-cmp cannot panic
// (docs/decisions.md).
func serverTestMachinery() []string {
	var out []string
	for _, p := range testMachinery {
		if p != "github.com/google/go-cmp/..." {
			out = append(out, p)
		}
	}
	return out
}

// --- the rules' mechanics ---

// Kind is what a rule constrains.
type Kind int

// The kinds of rule.
const (
	// MayOnlyImport: every module package the rule's package imports
	// matches a target (no target: it imports no module package).
	MayOnlyImport Kind = iota
	// OnlyImportedBy: every module package importing the rule's package
	// matches a target or the rule's package pattern (no target: only
	// tests import it).
	OnlyImportedBy
	// MayNotLink: no transitive dependency of the rule's package matches a
	// target.
	MayNotLink
	// MayOnlyImportOutside: outside the module, the rule's package imports
	// the standard library and the targets only.
	MayOnlyImportOutside
	// MayNotImport: no module package the rule's package imports directly
	// matches a target.
	MayNotImport
)

// Constraint is what a rule requires of its package: a kind and the
// package patterns it names.
type Constraint struct {
	Kind    Kind
	Targets []string
}

func mayOnlyImport(pkgs ...string) Constraint  { return Constraint{MayOnlyImport, pkgs} }
func onlyImportedBy(pkgs ...string) Constraint { return Constraint{OnlyImportedBy, pkgs} }
func mayNotLink(pkgs ...string) Constraint     { return Constraint{MayNotLink, pkgs} }
func mayNotImport(pkgs ...string) Constraint   { return Constraint{MayNotImport, pkgs} }

// mayOnlyImportOutside: outside the module, pkg imports the standard library
// and the named packages only.
func mayOnlyImportOutside(pkgs ...string) Constraint {
	return Constraint{MayOnlyImportOutside, pkgs}
}

// Text is the constraint as a predicate of its package ("may only import
// ref, fast"), each target written by name (the identity, or a Markdown code
// span for a page).
func (c Constraint) Text(name func(string) string) string {
	names := make([]string, len(c.Targets))
	for i, t := range c.Targets {
		names[i] = name(t)
	}
	list := strings.Join(names, ", ")
	switch c.Kind {
	case MayOnlyImport:
		if list == "" {
			return "imports no module package"
		}
		return "may only import " + list
	case OnlyImportedBy:
		if list == "" {
			return "may only be imported by tests"
		}
		return "may only be imported by " + list
	case MayOnlyImportOutside:
		if list == "" {
			return "imports only the standard library"
		}
		return "imports only the standard library and " + list
	case MayNotImport:
		return "may not import " + list
	default:
		return "may not link " + list
	}
}

// Rule is one row of Rules.
type Rule struct {
	// Spec names the TestImportRules subtest that checks this row.
	Spec string
	// Pkg is the package pattern the rule is about.
	Pkg string
	Constraint
	// Why is the rule's reason, shown with every violation.
	Why string
}

// String is the rule as a sentence: "server may only import ref, catalog".
func (r Rule) String() string {
	return r.Pkg + " " + r.Text(func(s string) string { return s })
}

// Match reports whether the module-relative (or, outside the module, full)
// import path p matches the pattern pat: "x/..." matches x and every path
// under it, any other pattern is a path.Match glob.
func Match(pat, p string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	ok, _ := path.Match(pat, p)
	return ok
}

func matchAny(pats []string, p string) bool {
	return slices.ContainsFunc(pats, func(pat string) bool { return Match(pat, p) })
}

// Violations lists r's violations in g, each naming the importing and the
// imported (or linked) package, in g.Local order.
func (r Rule) Violations(g *Graph) []string {
	var out []string
	for _, p := range g.Local {
		rp := g.Rel(p)
		info := g.Packages[p]
		switch r.Kind {
		case MayOnlyImport:
			if !Match(r.Pkg, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.IsLocal(imp) && !matchAny(r.Targets, g.Rel(imp)) {
					out = append(out, fmt.Sprintf("%s imports %s", rp, g.Rel(imp)))
				}
			}
		case MayNotImport:
			if !Match(r.Pkg, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.IsLocal(imp) && matchAny(r.Targets, g.Rel(imp)) {
					out = append(out, fmt.Sprintf("%s imports %s", rp, g.Rel(imp)))
				}
			}
		case MayOnlyImportOutside:
			if !Match(r.Pkg, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.IsLocal(imp) || matchAny(r.Targets, imp) {
					continue
				}
				if dep, ok := g.Packages[imp]; !ok || !dep.Standard {
					out = append(out, fmt.Sprintf("%s imports %s", rp, imp))
				}
			}
		case OnlyImportedBy:
			if Match(r.Pkg, rp) || matchAny(r.Targets, rp) {
				continue
			}
			for _, imp := range info.Imports {
				if g.IsLocal(imp) && Match(r.Pkg, g.Rel(imp)) {
					out = append(out, fmt.Sprintf("%s imports %s", rp, g.Rel(imp)))
				}
			}
		case MayNotLink:
			if !Match(r.Pkg, rp) {
				continue
			}
			for _, dep := range info.Deps {
				if !matchAny(r.Targets, g.Rel(dep)) {
					continue
				}
				// Name only where the chain first enters forbidden ground
				// (equiv, not also the go-cmp it drags in).
				chain := g.Chain(p, dep)
				if slices.ContainsFunc(chain[1:len(chain)-1], func(q string) bool { return matchAny(r.Targets, q) }) {
					continue
				}
				out = append(out, fmt.Sprintf("%s links %s via %s", rp, g.Rel(dep), strings.Join(chain, " → ")))
			}
		}
	}
	return out
}
