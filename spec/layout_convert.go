package spec

// ConvertMode selects what layout.convert does (docs/spec/transfer.md §7.2, §7.3).
type ConvertMode string

const (
	// ConvertRelayout rewrites a whole host arena from Layout into To (§7.2 "full relayout").
	ConvertRelayout ConvertMode = "relayout"
	// ConvertLoad copies host pages into device pages (H2D, §7.2).
	ConvertLoad ConvertMode = "load"
	// ConvertBackup copies device pages into host pages (D2H, §7.2).
	ConvertBackup ConvertMode = "backup"
	// ConvertPageGet is a storage backend's flat page read: every layer of a
	// page, in host byte order (§7.3, "flat page get").
	ConvertPageGet ConvertMode = "page_get"
)

// IOBackend is HiCache's host↔device copy backend (§7.3). The empty string
// means IOBackendDirect, the path every layout supports.
type IOBackend string

const (
	// IOBackendDirect is the direct (CPU-descriptor) copy path.
	IOBackendDirect IOBackend = "direct"
	// IOBackendKernel is the GPU gather/scatter kernel path.
	IOBackendKernel IOBackend = "kernel"
)

// IndexDevice is where the caller's index tensors live (§7.3). The empty
// string means IndexOnCPU.
type IndexDevice string

const (
	// IndexOnCPU is host-resident indices.
	IndexOnCPU IndexDevice = "cpu"
	// IndexOnCUDA is device-resident indices.
	IndexOnCUDA IndexDevice = "cuda"
)

// IndexDType is the element type of the caller's index tensors (§7.3). The
// empty string means IndexInt64.
type IndexDType string

const (
	// IndexInt64 is int64 indices, the only type the direct path takes.
	IndexInt64 IndexDType = "int64"
	// IndexInt32 is int32 indices.
	IndexInt32 IndexDType = "int32"
)

// LayoutConvertInput is the input of layout.convert: a host arena geometry,
// the §7.3 configuration checked before anything else, and the mode's own
// fields. Fields a mode does not read must be left at their zero value.
type LayoutConvertInput struct {
	// Mode is "relayout", "load", "backup" or "page_get".
	Mode ConvertMode `json:"mode"`
	// Layout is the host arena's layout (the source, "from", of a relayout).
	Layout HostLayout `json:"layout"`
	// To is the relayout target layout; relayout only.
	To HostLayout `json:"to,omitempty"`
	// Pool is "mla" or "mha"; MHA arenas hold a K plane then a V plane.
	Pool HostPool `json:"pool"`
	// Layers is L, >= 1.
	Layers int64 `json:"layers"`
	// Pages is the host arena's page count NP, >= 1.
	Pages int64 `json:"pages"`
	// PageSize is P in tokens, >= 1.
	PageSize int64 `json:"page_size"`
	// TokenBytes is tb, bytes per token per layer per plane, >= 1.
	TokenBytes int64 `json:"token_bytes"`
	// IOBackend is "direct" (default when empty) or "kernel".
	IOBackend IOBackend `json:"io_backend,omitempty"`
	// StorageBackend names a configured storage backend; "" is none.
	StorageBackend string `json:"storage_backend,omitempty"`
	// LPFKernelUnavailable reports that the LPF direct kernel is missing;
	// false, the normal case, means it is available.
	LPFKernelUnavailable bool `json:"lpf_kernel_unavailable,omitempty"`
	// IndexDevice is "cpu" (default when empty) or "cuda".
	IndexDevice IndexDevice `json:"index_device,omitempty"`
	// IndexDType is "int64" (default when empty) or "int32".
	IndexDType IndexDType `json:"index_dtype,omitempty"`
	// Layer is the one layer a load or backup moves; absent moves every layer.
	Layer *int64 `json:"layer,omitempty"`
	// DevicePages is the device pool's page count per layer; load/backup only.
	DevicePages int64 `json:"device_pages,omitempty"`
	// HostIndices are host token slots, whole pages (load, backup, page_get).
	HostIndices []int64 `json:"host_indices,omitempty"`
	// DeviceIndices are device token slots paired with HostIndices (load, backup).
	DeviceIndices []int64 `json:"device_indices,omitempty"`
	// Host is the host arena in Layout, exactly the geometry's size.
	Host []byte `json:"host"`
	// Device is the layer-first device arena (load, backup): planes × L ×
	// device_pages × page_size × token_bytes bytes.
	Device []byte `json:"device,omitempty"`
}

// LayoutConvertOutput is the result of layout.convert.
type LayoutConvertOutput struct {
	// Arena is the written arena: the host arena in To (relayout), the
	// updated device arena (load), the updated host arena (backup), or the
	// requested flat pages one after another (page_get).
	Arena []byte `json:"arena"`
	// Descriptors counts the contiguous copies the operation takes. load and
	// backup: the §7.2 rule, per layer and plane, summed over the runs of
	// (host page, device page) pairs: 1 per run under LF and LPF, Count under
	// PFD, Count×page_size under PF. relayout: the fewest copies that do it,
	// i.e. the maximal source ranges whose bytes land contiguously. page_get:
	// the contiguous host ranges read, per page and plane (1 under PF and
	// PFD: one pointer per page; layers under LF).
	Descriptors int64 `json:"descriptors"`
}

// ConvertPlan is a validated layout.convert request.
type ConvertPlan struct {
	// Host is the host arena's geometry (relayout: the source).
	Host HostGeometry
	// To is the relayout target geometry; zero in other modes.
	To HostGeometry
	// Device is the device arena's geometry (layer-first, NP = device_pages)
	// for load and backup; zero in other modes.
	Device HostGeometry
	// FirstLayer and EndLayer bound the layers a load or backup moves.
	FirstLayer, EndLayer int64
	// SortHost is §7.2's index order rule: under LF on the direct backend
	// the host pages are sorted ascending (stably) and the device pages
	// follow the same permutation; otherwise caller order is kept.
	SortHost bool
	// Pages is the number of page pairs (load, backup) or pages read (page_get).
	Pages int64
}
