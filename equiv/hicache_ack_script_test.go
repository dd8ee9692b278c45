package equiv

import (
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// TestAckTraceOverTheOutputBoundIsRefusedAlike: a create of 2^22 ranks
// passes the per-rank bound, but 17 steps of them are 17·2^22 per-rank trace
// entries, past the 2^26 a 1 GiB output holds at 16 bytes each, so both
// twins refuse the script with the same too_large error before any rank is
// built. It is a test rather than a table case because the refusal depends
// on the limits: kvtwin serve's default per-request output ratio refuses it
// at another check, so as a fixture it would not replay on a default server.
func TestAckTraceOverTheOutputBoundIsRefusedAlike(t *testing.T) {
	in := ackScript(ackCreate(1<<22, 1, 0))
	for range 16 {
		in.Steps = append(in.Steps, spec.AckStep{Op: spec.AckReset})
	}
	s := HiCacheAckScript()
	if reason, diff := s.Check("fast", s.Op.Fast, in, spec.ErrTooLarge); reason != "" {
		t.Errorf("2^22 ranks, 17 steps: %s\n%s", reason, diff)
	}
}
