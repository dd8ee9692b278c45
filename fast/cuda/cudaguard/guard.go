//go:build cuda

// Package cudaguard starts the CUDA driver before gorgonia.org/cu does, so a
// failing driver is reported, not os.Exit'ed. A driver that cannot start is
// so reported with its reason instead of cu's init calling os.Exit(1) with a
// terse message. It is imported (blank)
// by fast/cuda; its import path sorts before "gorgonia.org/cu", and since Go
// 1.21 packages whose imports are ready initialise in import-path order, so
// this init runs first (docs/design/cuda.md §7).
//
// A test binary (name ending in ".test") exits 0 with a SKIP line, unless
// KVTWIN_REQUIRE_CUDA=1, which makes it exit 1: a GPU check must not pass by
// skipping. Any other binary exits 1 naming the reason: a -tags cuda binary
// cannot run without a usable driver, and nothing falls back silently.
package cudaguard

// #cgo LDFLAGS: -lcuda
// #include <cuda.h>
import "C"

import (
	"fmt"
	"os"
	"strings"
)

func init() {
	r := C.cuInit(0)
	if r == C.CUDA_SUCCESS {
		return
	}
	var name *C.char
	msg := "unknown error"
	if C.cuGetErrorName(r, &name) == C.CUDA_SUCCESS && name != nil {
		msg = C.GoString(name)
	}
	reason := fmt.Sprintf("CUDA driver present but unusable: cuInit -> %d %s", int(r), msg)
	if strings.HasSuffix(os.Args[0], ".test") && os.Getenv("KVTWIN_REQUIRE_CUDA") != "1" {
		fmt.Println("SKIP: " + reason + " (set KVTWIN_REQUIRE_CUDA=1 to fail instead)")
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "kvtwin: "+reason+"; this binary was built with -tags cuda and needs a usable CUDA device")
	os.Exit(1)
}
