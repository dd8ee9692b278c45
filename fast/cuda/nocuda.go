//go:build !cuda

package cuda

import (
	"time"

	"github.com/kvtwin/kvtwin/ref"
)

// Enabled reports whether this binary was built with the CUDA path (-tags cuda).
const Enabled = false

// Ready reports whether the CUDA runtime is usable. Without -tags cuda it
// is always ErrNoCUDA.
func Ready() error { return ErrNoCUDA }

// Info describes the driver and device in use. Without -tags cuda it is
// always ErrNoCUDA.
func Info() (DriverInfo, error) { return DriverInfo{}, ErrNoCUDA }

// FilterCPRank is the CUDA twin of ref.FilterCPRank; without -tags cuda it
// returns ErrNoCUDA.
func FilterCPRank(ref.Limits, ref.FilterCPRankInput) (ref.FilterCPRankOutput, error) {
	return ref.FilterCPRankOutput{}, ErrNoCUDA
}

// LayoutConvert is the CUDA twin of ref.LayoutConvert; without -tags cuda
// it returns ErrNoCUDA.
func LayoutConvert(ref.Limits, ref.LayoutConvertInput) (ref.LayoutConvertOutput, error) {
	return ref.LayoutConvertOutput{}, ErrNoCUDA
}

// SetKernelTiming returns ErrNoCUDA without -tags cuda.
func SetKernelTiming(bool) error { return ErrNoCUDA }

// Stats returns ErrNoCUDA without -tags cuda.
func Stats() (KernelStats, error) { return KernelStats{}, ErrNoCUDA }

// MeasureCopy returns ErrNoCUDA without -tags cuda.
func MeasureCopy(int64, int) (time.Duration, error) { return 0, ErrNoCUDA }

// CPSplit is the CUDA twin of ref.CPSplit; without -tags cuda it returns
// ErrNoCUDA.
func CPSplit(ref.Limits, ref.CPSplitInput) (ref.CPSplitOutput, error) {
	return ref.CPSplitOutput{}, ErrNoCUDA
}

// CPRerange is the CUDA twin of ref.CPRerange; without -tags cuda it
// returns ErrNoCUDA.
func CPRerange(ref.Limits, ref.CPRerangeInput) (ref.CPRerangeOutput, error) {
	return ref.CPRerangeOutput{}, ErrNoCUDA
}

// CPCompactValid is the CUDA twin of ref.CPCompactValid; without -tags cuda
// it returns ErrNoCUDA.
func CPCompactValid(ref.Limits, ref.CPCompactInput) (ref.CPRowsOutput, error) {
	return ref.CPRowsOutput{}, ErrNoCUDA
}

// CPRestorePadded is the CUDA twin of ref.CPRestorePadded; without -tags
// cuda it returns ErrNoCUDA.
func CPRestorePadded(ref.Limits, ref.CPRestoreInput) (ref.CPRowsOutput, error) {
	return ref.CPRowsOutput{}, ErrNoCUDA
}

// RemapLocs is the CUDA twin of ref.RemapLocs; without -tags cuda it
// returns ErrNoCUDA.
func RemapLocs(ref.Limits, ref.RemapLocsInput) (ref.RemapLocsOutput, error) {
	return ref.RemapLocsOutput{}, ErrNoCUDA
}

// FP8QuantizeRow is the CUDA twin of ref.FP8QuantizeRow; without -tags
// cuda it returns ErrNoCUDA.
func FP8QuantizeRow(ref.Limits, ref.FP8QuantizeRowInput) (ref.FP8RowsOutput, error) {
	return ref.FP8RowsOutput{}, ErrNoCUDA
}

// FP8QuantizeIndexK is the CUDA twin of ref.FP8QuantizeIndexK; without
// -tags cuda it returns ErrNoCUDA.
func FP8QuantizeIndexK(ref.Limits, ref.FP8QuantizeIndexKInput) (ref.FP8RowsOutput, error) {
	return ref.FP8RowsOutput{}, ErrNoCUDA
}

// FP8StorePages is the CUDA twin of ref.FP8StorePages; without -tags cuda
// it returns ErrNoCUDA.
func FP8StorePages(ref.Limits, ref.FP8StoreInput) (ref.FP8StoreOutput, error) {
	return ref.FP8StoreOutput{}, ErrNoCUDA
}

// FP8MaterializePages is the CUDA twin of ref.FP8MaterializePages; without
// -tags cuda it returns ErrNoCUDA.
func FP8MaterializePages(ref.Limits, ref.FP8MaterializeInput) (ref.FP8MaterializeOutput, error) {
	return ref.FP8MaterializeOutput{}, ErrNoCUDA
}

// FP8ComposeCurrent is the CUDA twin of ref.FP8ComposeCurrent; without
// -tags cuda it returns ErrNoCUDA.
func FP8ComposeCurrent(ref.Limits, ref.FP8ComposeInput) (ref.FP8ComposeOutput, error) {
	return ref.FP8ComposeOutput{}, ErrNoCUDA
}

// FP8DequantTopK is the CUDA twin of ref.FP8DequantTopK; without -tags
// cuda it returns ErrNoCUDA.
func FP8DequantTopK(ref.Limits, ref.FP8DequantTopKInput) (ref.FP8DequantTopKOutput, error) {
	return ref.FP8DequantTopKOutput{}, ErrNoCUDA
}
