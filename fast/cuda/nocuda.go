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

// TransferFilterCPRank is the CUDA twin of ref.TransferFilterCPRank; without -tags cuda it
// returns ErrNoCUDA.
func TransferFilterCPRank(ref.Limits, ref.TransferFilterCPRankInput) (ref.TransferFilterCPRankOutput, error) {
	return ref.TransferFilterCPRankOutput{}, ErrNoCUDA
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
func CPCompactValid(ref.Limits, ref.CPCompactValidInput) (ref.CPCompactValidOutput, error) {
	return ref.CPCompactValidOutput{}, ErrNoCUDA
}

// CPRestorePadded is the CUDA twin of ref.CPRestorePadded; without -tags
// cuda it returns ErrNoCUDA.
func CPRestorePadded(ref.Limits, ref.CPRestorePaddedInput) (ref.CPRestorePaddedOutput, error) {
	return ref.CPRestorePaddedOutput{}, ErrNoCUDA
}

// CPRemapLocs is the CUDA twin of ref.CPRemapLocs; without -tags cuda it
// returns ErrNoCUDA.
func CPRemapLocs(ref.Limits, ref.CPRemapLocsInput) (ref.CPRemapLocsOutput, error) {
	return ref.CPRemapLocsOutput{}, ErrNoCUDA
}

// FP8QuantizeRow is the CUDA twin of ref.FP8QuantizeRow; without -tags
// cuda it returns ErrNoCUDA.
func FP8QuantizeRow(ref.Limits, ref.FP8QuantizeRowInput) (ref.FP8QuantizeRowOutput, error) {
	return ref.FP8QuantizeRowOutput{}, ErrNoCUDA
}

// FP8QuantizeIndexK is the CUDA twin of ref.FP8QuantizeIndexK; without
// -tags cuda it returns ErrNoCUDA.
func FP8QuantizeIndexK(ref.Limits, ref.FP8QuantizeIndexKInput) (ref.FP8QuantizeIndexKOutput, error) {
	return ref.FP8QuantizeIndexKOutput{}, ErrNoCUDA
}

// FP8StorePages is the CUDA twin of ref.FP8StorePages; without -tags cuda
// it returns ErrNoCUDA.
func FP8StorePages(ref.Limits, ref.FP8StorePagesInput) (ref.FP8StorePagesOutput, error) {
	return ref.FP8StorePagesOutput{}, ErrNoCUDA
}

// FP8MaterializePages is the CUDA twin of ref.FP8MaterializePages; without
// -tags cuda it returns ErrNoCUDA.
func FP8MaterializePages(ref.Limits, ref.FP8MaterializePagesInput) (ref.FP8MaterializePagesOutput, error) {
	return ref.FP8MaterializePagesOutput{}, ErrNoCUDA
}

// FP8ComposeCurrent is the CUDA twin of ref.FP8ComposeCurrent; without
// -tags cuda it returns ErrNoCUDA.
func FP8ComposeCurrent(ref.Limits, ref.FP8ComposeCurrentInput) (ref.FP8ComposeCurrentOutput, error) {
	return ref.FP8ComposeCurrentOutput{}, ErrNoCUDA
}

// FP8DequantTopK is the CUDA twin of ref.FP8DequantTopK; without -tags
// cuda it returns ErrNoCUDA.
func FP8DequantTopK(ref.Limits, ref.FP8DequantTopKInput) (ref.FP8DequantTopKOutput, error) {
	return ref.FP8DequantTopKOutput{}, ErrNoCUDA
}
