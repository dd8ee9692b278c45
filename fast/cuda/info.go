package cuda

import "time"

// DriverInfo describes the CUDA driver and device a cuda build runs on.
type DriverInfo struct {
	// Emulated is true when the loaded libcuda.so.1 is kvtwin's host
	// emulation driver (fast/cuda/emu), false for NVIDIA's driver.
	Emulated bool `json:"emulated"`
	// Driver is the driver's identification: the emulation's version string,
	// or "NVIDIA libcuda" with the driver API version.
	Driver string `json:"driver"`
	// DriverVersion is cuDriverGetVersion (e.g. 12080).
	DriverVersion int `json:"driver_version"`
	// Device is device 0's name.
	Device string `json:"device"`
	// ComputeCapability is "major.minor".
	ComputeCapability string `json:"compute_capability"`
	// Kernels lists the kernel entry points loaded, in name order.
	Kernels []string `json:"kernels"`
}

// KernelStats counts the kernel launches made, and (while timing is on)
// their summed device time measured with CUDA events.
type KernelStats struct {
	// Launches is the number of kernel launches.
	Launches int64
	// KernelTime is the device time of the timed launches.
	KernelTime time.Duration
}
