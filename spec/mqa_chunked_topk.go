package spec

// MQAChunkedTopKInput is the input of mqa.chunked_topk (§8.3).
type MQAChunkedTopKInput struct {
	// Logits are Q rows of Kt fp32 scores each (rectangular).
	Logits [][]float32 `json:"logits"`
	// KS are the window starts, one per row, 0 <= ks[q] <= ke[q].
	KS []int64 `json:"ks"`
	// KE are the window ends, one per row, ke[q] <= Kt.
	KE []int64 `json:"ke"`
	// TopK is the output width per row, >= 1.
	TopK int64 `json:"topk"`
	// Offset are the row-addressed RAGGED offsets added to every emitted
	// index (int32, >= 0); empty means none, else at least Q of them.
	Offset []int32 `json:"offset,omitempty"`
	// chunkRows is the number of query rows per chunk, >= 1.
	ChunkRows int64 `json:"chunk_rows"`
}

// MQAChunkedTopKOutput is the output of mqa.chunked_topk.
type MQAChunkedTopKOutput struct {
	// Indices has one row of TopK entries per query row: the selected
	// window positions j − ks (+ offset) in ascending j order, then −1s.
	Indices [][]int32 `json:"indices"`
}
