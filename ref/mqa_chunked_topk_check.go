package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for mqa.chunked_topk (docs/spec/cp-layout.md §8.3): its sentinel, the input and each row.

// ValidateMQAChunkedTopK checks in against §8.5, in the contract order: chunk
// rows, topk, rectangular logits, bound list lengths, offset length, the
// output bound, then each row's window (ks >= 0, ks <= ke, ke <= Kt) and
// offset (>= 0, and the largest emitted index fits int32). It returns Kt.
func ValidateMQAChunkedTopK(lim spec.Limits, in spec.MQAChunkedTopKInput) (int64, error) {
	if in.ChunkRows < 1 {
		return 0, spec.Reject(spec.ErrShape, "chunk_rows", in.ChunkRows, ">= 1")
	}
	if in.TopK <= 0 {
		return 0, spec.Reject(spec.ErrShape, "topk", in.TopK, ">= 1")
	}
	q := len(in.Logits)
	kt := 0
	if q > 0 {
		kt = len(in.Logits[0])
	}
	for r, row := range in.Logits {
		if len(row) != kt {
			return 0, spec.Reject(spec.ErrShape, spec.Idx("logits", r), len(row), fmt.Sprintf("Kt (%d) scores, as logits[0]", kt))
		}
	}
	if len(in.KS) != q {
		return 0, spec.Reject(spec.ErrShape, "ks", len(in.KS), fmt.Sprintf("one per row (%d)", q))
	}
	if len(in.KE) != q {
		return 0, spec.Reject(spec.ErrShape, "ke", len(in.KE), fmt.Sprintf("one per row (%d)", q))
	}
	if len(in.Offset) > 0 && len(in.Offset) < q {
		return 0, spec.Reject(spec.ErrShape, "offset", len(in.Offset), fmt.Sprintf(">= one per row (%d), or none", q))
	}
	if err := lim.CheckOutput("topk", in.TopK, 4*int64(q)); err != nil {
		return 0, err
	}
	for r := range q {
		if err := checkTopKRow(in, r, int64(kt)); err != nil {
			return 0, err
		}
	}
	return int64(kt), nil
}

func checkTopKRow(in spec.MQAChunkedTopKInput, r int, kt int64) error {
	ks, ke := in.KS[r], in.KE[r]
	switch {
	case ks < 0:
		return spec.Reject(spec.ErrNegative, spec.Idx("ks", r), ks, ">= 0")
	case ks > ke:
		return spec.Reject(spec.ErrShape, spec.Idx("ks", r), ks, fmt.Sprintf("<= ke[%d] (%d)", r, ke))
	case ke > kt:
		return spec.Reject(spec.ErrShape, spec.Idx("ke", r), ke, fmt.Sprintf("<= Kt (%d)", kt))
	}
	if len(in.Offset) == 0 {
		return nil
	}
	off := int64(in.Offset[r])
	if off < 0 {
		return spec.Reject(spec.ErrNegative, spec.Idx("offset", r), off, ">= 0 (a negative index would read as padding)")
	}
	if ke > ks && off+(ke-ks-1) > math.MaxInt32 {
		return spec.Reject(spec.ErrOverflow, spec.Idx("offset", r), off, fmt.Sprintf("<= %d - (ke-ks-1) (%d)", math.MaxInt32, ke-ks-1))
	}
	return nil
}
