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
