//go:build !cuda

package cuda

import (
	"time"

	"github.com/kvtwin/kvtwin/spec"
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
func TransferFilterCPRank(spec.Limits, spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
	return spec.TransferFilterCPRankOutput{}, ErrNoCUDA
}

// LayoutConvert is the CUDA twin of ref.LayoutConvert; without -tags cuda
// it returns ErrNoCUDA.
func LayoutConvert(spec.Limits, spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
	return spec.LayoutConvertOutput{}, ErrNoCUDA
}

// SetKernelTiming returns ErrNoCUDA without -tags cuda.
func SetKernelTiming(bool) error { return ErrNoCUDA }

// Stats returns ErrNoCUDA without -tags cuda.
func Stats() (KernelStats, error) { return KernelStats{}, ErrNoCUDA }

// MeasureCopy returns ErrNoCUDA without -tags cuda.
func MeasureCopy(int64, int) (time.Duration, error) { return 0, ErrNoCUDA }

// CPSplit is the CUDA twin of ref.CPSplit; without -tags cuda it returns
// ErrNoCUDA.
func CPSplit(spec.Limits, spec.CPSplitInput) (spec.CPSplitOutput, error) {
	return spec.CPSplitOutput{}, ErrNoCUDA
}

// CPRerange is the CUDA twin of ref.CPRerange; without -tags cuda it
// returns ErrNoCUDA.
func CPRerange(spec.Limits, spec.CPRerangeInput) (spec.CPRerangeOutput, error) {
	return spec.CPRerangeOutput{}, ErrNoCUDA
}

// CPCompactValid is the CUDA twin of ref.CPCompactValid; without -tags cuda
// it returns ErrNoCUDA.
func CPCompactValid(spec.Limits, spec.CPCompactValidInput) (spec.CPCompactValidOutput, error) {
	return spec.CPCompactValidOutput{}, ErrNoCUDA
}

// CPRestorePadded is the CUDA twin of ref.CPRestorePadded; without -tags
// cuda it returns ErrNoCUDA.
func CPRestorePadded(spec.Limits, spec.CPRestorePaddedInput) (spec.CPRestorePaddedOutput, error) {
	return spec.CPRestorePaddedOutput{}, ErrNoCUDA
}

// CPRemapLocs is the CUDA twin of ref.CPRemapLocs; without -tags cuda it
// returns ErrNoCUDA.
func CPRemapLocs(spec.Limits, spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error) {
	return spec.CPRemapLocsOutput{}, ErrNoCUDA
}

// FP8QuantizeRow is the CUDA twin of ref.FP8QuantizeRow; without -tags
// cuda it returns ErrNoCUDA.
func FP8QuantizeRow(spec.Limits, spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
	return spec.FP8QuantizeRowOutput{}, ErrNoCUDA
}

// FP8QuantizeIndexK is the CUDA twin of ref.FP8QuantizeIndexK; without
// -tags cuda it returns ErrNoCUDA.
func FP8QuantizeIndexK(spec.Limits, spec.FP8QuantizeIndexKInput) (spec.FP8QuantizeIndexKOutput, error) {
	return spec.FP8QuantizeIndexKOutput{}, ErrNoCUDA
}

// FP8StorePages is the CUDA twin of ref.FP8StorePages; without -tags cuda
// it returns ErrNoCUDA.
func FP8StorePages(spec.Limits, spec.FP8StorePagesInput) (spec.FP8StorePagesOutput, error) {
	return spec.FP8StorePagesOutput{}, ErrNoCUDA
}

// FP8MaterializePages is the CUDA twin of ref.FP8MaterializePages; without
// -tags cuda it returns ErrNoCUDA.
func FP8MaterializePages(spec.Limits, spec.FP8MaterializePagesInput) (spec.FP8MaterializePagesOutput, error) {
	return spec.FP8MaterializePagesOutput{}, ErrNoCUDA
}

// FP8ComposeCurrent is the CUDA twin of ref.FP8ComposeCurrent; without
// -tags cuda it returns ErrNoCUDA.
func FP8ComposeCurrent(spec.Limits, spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
	return spec.FP8ComposeCurrentOutput{}, ErrNoCUDA
}

// FP8DequantTopK is the CUDA twin of ref.FP8DequantTopK; without -tags
// cuda it returns ErrNoCUDA.
func FP8DequantTopK(spec.Limits, spec.FP8DequantTopKInput) (spec.FP8DequantTopKOutput, error) {
	return spec.FP8DequantTopKOutput{}, ErrNoCUDA
}
