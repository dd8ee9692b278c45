//go:build cuda

package cuda_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
)

// TestLoadedDriverIsTheExpectedOne proves which libcuda.so.1 this process
// loaded — the emulation exports kvtwin_emu_driver_version, NVIDIA's driver
// does not — and that the emulation is used only where no real driver is
// installed: it must never shadow one. scripts/cuda-test.sh and the GPU
// check set KVTWIN_CUDA_DRIVER to what they expect.
func TestLoadedDriverIsTheExpectedOne(t *testing.T) {
	info, err := cuda.Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver: %s; device: %s (sm %s)", info.Driver, info.Device, info.ComputeCapability)
	if info.Emulated {
		if where := realDriver(); where != "" {
			t.Fatalf("the emulation driver was loaded although a real NVIDIA driver is installed (%s)", where)
		}
	}
	switch want := os.Getenv("KVTWIN_CUDA_DRIVER"); want {
	case "emulation":
		if !info.Emulated {
			t.Fatalf("KVTWIN_CUDA_DRIVER=emulation but NVIDIA's driver was loaded: %s", info.Driver)
		}
	case "real":
		if info.Emulated {
			t.Fatalf("KVTWIN_CUDA_DRIVER=real but the emulation was loaded: %s", info.Driver)
		}
	case "":
	default:
		t.Fatalf("KVTWIN_CUDA_DRIVER=%q: want emulation or real", want)
	}
}

// realDriver names evidence of an installed NVIDIA driver, or "".
func realDriver() string {
	for _, p := range []string{"/proc/driver/nvidia/version", "/dev/nvidiactl"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if out, err := exec.Command("ldconfig", "-p").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "libcuda.so.1 ") {
				return strings.TrimSpace(line)
			}
		}
	}
	for _, d := range []string{"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"} {
		if _, err := os.Stat(d + "/libcuda.so.1"); err == nil {
			return d + "/libcuda.so.1"
		}
	}
	return ""
}
