package mutants

// Component is a mutant of a part of kvtwin that is not an op, so the
// differential suite cannot hunt it: the event consumers, `audit merge`
// and its reports, and the adapter kits. Each is a wrapper that puts one
// plausible bug back around the component's production code; it lives in
// the test files of the package that owns the component (a test build
// only: no production package has a switch for it), and the test KilledBy
// runs it and fails unless the component's check catches it. That test
// also requires its mutants to be exactly the ones listed here, so
// docs/bugzoo.md cannot name a mutant nobody runs.
type Component struct {
	// Name is the mutant's name, unique in the zoo.
	Name string
	// Component is the package (or file) whose behaviour the mutant breaks.
	Component string
	// Spec is the document section that says what the component must do.
	Spec string
	// Bug says what the mutant does wrong.
	Bug string
	// KilledBy is the test that kills the mutant, named for the class of
	// behaviour it checks (issue 30 item 7), and where it lives.
	KilledBy string
	// In is the test file holding KilledBy and the mutant.
	In string
}

// Components returns the component mutants, grouped by the test that
// kills them, in the order docs/bugzoo.md lists them.
func Components() []Component {
	const merge = "TestEveryFailureKindSurvivesMergeAndHTML"
	const mergeIn = "cmd/kvtwin/auditkinds_test.go"
	const mergeSpec = "docs/campaigns.md (merge), docs/adapters.md (how replies are classified)"
	const goExec, goHTTP = "TestGoKitErrorPathsOverExec", "TestGoKitErrorPathsOverHTTP"
	const goIn = "adapter/errorpaths_test.go"
	const execSpec, httpSpec = "docs/adapters.md (exec:), package adapter", "docs/adapters.md (http://), package adapter"
	const pyExec, pyHTTP = "test_every_error_path_over_exec", "test_every_error_path_over_http"
	const pyIn = "adapters/python/test_error_paths.py"
	const pySpec = "docs/adapters.md, adapters/python/README.md"
	const js = "TestJetStreamApplierDropsABatchRedeliveredAtTheSameSeq"
	const jsIn = "events/scaleout/applyrule_test.go"
	const jsSpec = "kv-events.md §4.3, §4.4"
	const zmq = "TestZeroMQConsumerAppliesABatchRedeliveredByReplayOnce"
	const zmqIn = "events/zmq/consumer_test.go"
	const zmqSpec = "kv-events.md §3.1, §3.2"
	return []Component{
		{"merge-keeps-first-shards-transport-errors", "kvtwin audit merge", mergeSpec,
			"the transport errors of every shard but the first are lost: counts and kept failures", merge, mergeIn},
		{"merge-drops-timeouts", "kvtwin audit merge", mergeSpec,
			"timeouts are neither counted nor kept in the merged row", merge, mergeIn},
		{"merge-drops-not-implemented", "kvtwin audit merge", mergeSpec,
			"the merged report forgets the ops an implementation does not declare", merge, mergeIn},
		{"merge-drops-not-audited", "kvtwin audit merge", mergeSpec,
			"the merged report forgets what --ops asked for and no case ran", merge, mergeIn},
		{"merge-takes-max-mismatches", "kvtwin audit merge", mergeSpec,
			"a merged row's mismatches are not the shards' sum", merge, mergeIn},
		{"report-omits-transport-failures", "audit text and HTML reports", mergeSpec,
			"the reports count transport errors but show none of them (reason, input)", merge, mergeIn},
		{"report-omits-not-audited", "audit text and HTML reports", mergeSpec,
			"the reports say nothing of what was asked for and not audited", merge, mergeIn},
		{"report-omits-not-implemented", "audit text and HTML reports", mergeSpec,
			"the reports draw an op the implementation does not declare as no verdict at all", merge, mergeIn},
		{"go-kit-answers-lines-that-are-not-requests", "Go adapter kit, exec", execSpec,
			"a line that is not a request is answered (with id 0): a reply kvtwin did not ask for", goExec, goIn},
		{"go-kit-answers-id-zero", "Go adapter kit, exec", execSpec,
			"a request with id 0 (not a positive integer) is answered", goExec, goIn},
		{"go-kit-stops-at-an-oversized-line", "Go adapter kit, exec", execSpec,
			"a line over MaxLineBytes ends the serve loop: every later request goes unanswered", goExec, goIn},
		{"go-kit-panic-escapes", "Go adapter kit, exec", execSpec,
			"a panicking function takes the adapter down instead of answering internal", goExec, goIn},
		{"go-kit-bad-input-as-internal", "Go adapter kit, exec", execSpec,
			"an input that does not decode is answered internal, not bad_json", goExec, goIn},
		{"go-kit-http-not-implemented-as-internal", "Go adapter kit, HTTP", httpSpec,
			"an op not implemented is answered 400 internal: kvtwin counts a wrong answer, not an op the adapter lacks", goHTTP, goIn},
		{"go-kit-http-rejection-as-output", "Go adapter kit, HTTP", httpSpec,
			"a rejection is answered 200 with the error object as the output", goHTTP, goIn},
		{"go-kit-http-panic-without-code", "Go adapter kit, HTTP", httpSpec,
			"a panic's error object has no code", goHTTP, goIn},
		{"go-kit-http-oversized-body-as-bad-request", "Go adapter kit, HTTP", httpSpec,
			"a body over MaxLineBytes is answered 400 bad_json, not 413", goHTTP, goIn},
		{"py-kit-answers-lines-that-are-not-requests", "Python adapter kit, exec", pySpec,
			"a line that is not a request is answered (with id 0): a reply kvtwin did not ask for", pyExec, pyIn},
		{"py-kit-answers-id-zero", "Python adapter kit, exec", pySpec,
			"any integer id is a request: ids 0 and -1 are answered", pyExec, pyIn},
		{"py-kit-exception-escapes-exec", "Python adapter kit, exec", pySpec,
			"an exception other than Reject escapes the call and ends serve_exec", pyExec, pyIn},
		{"py-kit-output-not-checked", "Python adapter kit, exec", pySpec,
			"an output is sent without checking it is JSON: NaN goes out bare, a set as its repr", pyExec, pyIn},
		{"py-kit-exception-escapes-http", "Python adapter kit, HTTP", pySpec,
			"an exception other than Reject escapes the call: the connection drops without a reply", pyHTTP, pyIn},
		{"py-kit-http-unknown-op-as-internal", "Python adapter kit, HTTP", pySpec,
			"an op not registered fails as internal: kvtwin counts a wrong answer, not an op the adapter lacks", pyHTTP, pyIn},
		{"py-kit-http-body-bound-ignored", "Python adapter kit, HTTP", pySpec,
			"the body bound is not applied: an oversized body is read whole and answered", pyHTTP, pyIn},
		{"py-kit-http-rejection-as-200", "Python adapter kit, HTTP", pySpec,
			"a rejection is answered 200", pyHTTP, pyIn},
		{"jetstream-applier-reapplies-redelivered-batch", "JetStream applier (events/scaleout)", jsSpec,
			"a batch redelivered at or below the last seq of its epoch reaches the index, which takes it for a publisher restart", js, jsIn},
		{"jetstream-applier-ignores-epoch", "JetStream applier (events/scaleout)", jsSpec,
			"batches compared by seq alone: a publisher restart's batches are dropped as duplicates", js, jsIn},
		{"jetstream-applier-restarts-on-gap-flag", "JetStream applier (events/scaleout)", jsSpec,
			"Kvtwin-Gap restarts the source instead of being counted", js, jsIn},
		{"jetstream-applier-reapplies-duplicate-reset", "JetStream applier (events/scaleout)", jsSpec,
			"a reset seen twice in one epoch restarts the source twice", js, jsIn},
		{"zmq-consumer-applies-live-twice", "ZeroMQ consumer (events/zmq)", zmqSpec,
			"each live message reaches the index twice: the repeat is taken for a publisher restart", zmq, zmqIn},
		{"zmq-consumer-replays-as-live", "ZeroMQ consumer (events/zmq)", zmqSpec,
			"replayed batches are applied as live ones: a batch that came both ways is applied twice", zmq, zmqIn},
		{"zmq-consumer-ignores-replay-request", "ZeroMQ consumer (events/zmq)", zmqSpec,
			"the index's replay request is never sent: the gap is never filled, the batches after it stay held", zmq, zmqIn},
	}
}
