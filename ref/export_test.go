package ref

// Test-only exports (Go's export_test.go idiom): the pieces of an algorithm
// that ref's own external tests (package ref_test) pin with the spec's
// worked examples but that no other package calls. They are unexported in
// the package, so `go doc ./ref` lists the ops and what the other twins
// share, and exported here, where only `go test ./ref` sees them.

// Pieces of the ops' algorithms.
var (
	PositionsLocal         = positionsLocal         // cp-layout.md §1: a rank's position ids
	LastTokenRows          = lastTokenRows          // cp-layout.md §2: the last-token rows
	ChunkRows              = chunkRows              // cp-layout.md §8.4: the rows of one MQA chunk
	QuantizeRow656         = quantizeRow656         // cp-layout.md §7.2: one MLA row to FP8
	QuantizeIndexK         = quantizeIndexK         // cp-layout.md §7.3: one index-K row to FP8
	PageHash               = pageHash               // radix-acks.md §1.14: one page's unseeded hash
	DenseGrid              = denseGrid              // admission-serving.md §S3.4: a dense M grid
	ContigGrid             = contigGrid             // admission-serving.md §S3.4: a contiguous M grid
	ParseEstimatorChunkEnv = parseEstimatorChunkEnv // admission-serving.md A2.6: the chunk-cap variables
	ParseMQAChunkEnv       = parseMQAChunkEnv       // cp-layout.md §8.1: the chunk-cap variables
	PyNumber               = pyNumber               // admission-serving.md §S2.8: a Python number literal
	DecodeKVBatch          = decodeKVBatch          // kv-events.md §1.3: one batch payload
	DecodeKVBatchWithin    = decodeKVBatchWithin    // kv-events.md §1.3, A10: one payload under bounds
)

// StateLayerIdentityMismatch is transfer.md's state/layer pairing report.
type StateLayerIdentityMismatch = stateLayerIdentityMismatch

// Constants and sentinels the tests name.
const (
	BlockBytes         = blockBytes
	EnvMQAChunkMaxRows = envMQAChunkMaxRows
	ReasonUnpadded     = reasonUnpadded
)

var (
	ErrKeepIndexOutOfRange = errKeepIndexOutOfRange
	ErrMixedDeterminism    = errMixedDeterminism
)
