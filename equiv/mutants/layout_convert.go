package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LPFStorageAccepted is docs/spec/transfer.md §7.3's storage bug: a storage backend
// (and its flat page get) accepted on a layer_page_first arena. Storage
// assumes one pointer per page, PF-style: page p is the L×pb span at
// p×L×pb. On LPF that span is layer 0 of pages p…p+L-1, so with L=2, NP=2,
// P=1, tb=1 page 0 reads [l0p0, l0p1] instead of [l0p0, l1p0]. The fix
// refuses the combination up front.
func LPFStorageAccepted() equiv.Killable {
	return &equiv.Mutant[spec.LayoutConvertInput, spec.LayoutConvertOutput]{
		Spec:    equiv.LayoutConvert(),
		ID:      "lpf-storage-accepted",
		Section: "transfer.md §7.3",
		About:   "storage on a layer_page_first arena is accepted; a flat page read takes the PF-style L×pb span, [l0p0, l0p1] for page 0",
		Fn: func(lim spec.Limits, in spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
			if ref.UsesLPF(in) && in.Pool == spec.HostPoolMLA {
				in.StorageBackend = ""
				if in.Mode == spec.ConvertPageGet {
					in.Layout = spec.PageFirst // one pointer per page at p×L×pb
				}
			}
			return fast.LayoutConvert(lim, in)
		},
	}
}
