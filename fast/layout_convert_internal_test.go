package fast

import (
	"bytes"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRelayoutToPFBlockedMatchesRef drives the blocked PF walk with block
// budgets from one token per block (including a short last block) to the
// whole plane, over every small geometry, and checks bytes and copy count
// against ref: the catalog-sized shapes fit few blocks and the equivalence
// suite's shapes one, so block edges are exercised here.
func TestRelayoutToPFBlockedMatchesRef(t *testing.T) {
	lim := spec.DefaultLimits()
	blocked := 0
	for _, pool := range []spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA} {
		for _, from := range []spec.HostLayout{spec.LayerFirst, spec.LayerPageFirst, spec.PageFirstDirect} {
			for L := int64(1); L <= 3; L++ {
				for NP := int64(1); NP <= 3; NP++ {
					for P := int64(1); P <= 3; P++ {
						for tb := int64(1); tb <= 3; tb++ {
							host := make([]byte, 2*L*NP*P*tb)
							for i := range host {
								host[i] = byte(i*7 + 1)
							}
							in := spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: from, To: spec.PageFirst, Pool: pool,
								Layers: L, Pages: NP, PageSize: P, TokenBytes: tb}
							if pool == spec.HostPoolMLA {
								host = host[:len(host)/2]
							}
							in.Host = host
							want, err := ref.LayoutConvert(lim, in)
							if err != nil {
								continue // a combination §7 rejects (LPF on MHA)
							}
							plan, err := ref.ValidateLayoutConvert(lim, in)
							if err != nil {
								t.Fatal(err)
							}
							f := stridesOf(plan.Host)
							if pfRowsCoalesce(plan.To, f) {
								continue // relayoutInto keeps the dst-order walk
							}
							blocked++
							row := L * tb
							for _, budget := range []int64{0, row, 2*row + 1, 1 << 20} {
								dst := make([]byte, len(host))
								n := relayoutToPFBlocked(plan.To, f, host, dst, budget)
								if !bytes.Equal(dst, want.Arena) || n != want.Descriptors {
									t.Errorf("%s %s→PF L%d NP%d P%d tb%d budget %d: bytes equal %v, %d copies, ref %d",
										pool, from, L, NP, P, tb, budget, bytes.Equal(dst, want.Arena), n, want.Descriptors)
								}
							}
						}
					}
				}
			}
		}
	}
	if blocked == 0 {
		t.Fatal("no geometry took the blocked walk")
	}
}
