// Package cuda is kvtwin's GPU path: CUDA twins of catalog ops (-tags cuda),
// stubs returning ErrNoCUDA without the tag. The twins run on the CUDA
// driver API through gorgonia.org/cu (docs/gpu.md, docs/design/ARCHITECTURE.md
// "GPU path"). The driver is used only in files built with -tags cuda; without
// the tag every exported entry point is a stub returning ErrNoCUDA, so plain
// `go build ./...` and `go test ./...` need no CUDA at all.
//
// With the tag, one process holds one device context (device 0's primary
// context), made current on the calling goroutine's locked OS thread for the
// duration of each op; every op runs under one lock. The kernels
// (kernels/<base>.cu, compiled to the committed kernels/<base>.ptx by
// `make ptx`) are loaded once per process; device buffers are pooled by
// size class. Every driver call's result is checked and wrapped with the op
// name. On machines without a GPU, `make test` runs the same kernel sources
// through the host emulation driver in emu/ (see docs/gpu.md).
package cuda

import "errors"

// ErrNoCUDA is returned by every GPU entry point of a binary built without
// -tags cuda.
var ErrNoCUDA = errors.New("cuda: this binary was built without -tags cuda")
