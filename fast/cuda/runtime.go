//go:build cuda

package cuda

import (
	"embed"
	"fmt"
	"io/fs"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	_ "github.com/kvtwin/kvtwin/fast/cuda/cudaguard" // must initialise before gorgonia.org/cu
	"gorgonia.org/cu"
)

// Enabled reports whether this binary was built with the CUDA path (-tags cuda).
const Enabled = true

// kernelPTX holds every committed kernels/<base>.ptx (make ptx): one module
// each, loaded once per process.
//
//go:embed kernels/*.ptx
var kernelPTX embed.FS

// Launch geometry: 256 threads per block; grid-stride kernels cover any n,
// so the grid is capped at maxBlocks (a few waves on an H200's 132 SMs).
const (
	blockThreads = 256
	maxBlocks    = 132 * 32
)

// devicePtr is a device address (cu.DevicePtr).
type devicePtr = cu.DevicePtr

// poolCap bounds the bytes of idle device buffers kept for reuse.
const poolCap = 1 << 30

// device is the process's CUDA state: device 0's primary context, the
// loaded kernels and the buffer pool. It is created once (the context and
// the PTX JIT cost milliseconds) and every op runs under mu, on a locked OS
// thread with the context current, so there is one context per process and
// no concurrent use of it.
type device struct {
	mu       sync.Mutex
	ctx      cu.CUContext
	fns      map[string]cu.Function
	pool     map[int64][]cu.DevicePtr // idle buffers by size class
	pooled   int64                    // bytes in pool
	poison   byte                     // next poison byte (KVTWIN_CUDA_POISON=1)
	poisonOn bool
	info     DriverInfo
	stats    KernelStats
	timing   bool // record events around every launch (SetKernelTiming)
}

var (
	devOnce sync.Once
	dev     *device
	devErr  error
)

// Ready reports whether the CUDA runtime is usable: the device context
// exists and every kernel module loaded. The first call does the set-up.
func Ready() error {
	_, err := getDevice()
	return err
}

// Info describes the driver and device in use.
func Info() (DriverInfo, error) {
	d, err := getDevice()
	if err != nil {
		return DriverInfo{}, err
	}
	return d.info, nil
}

func getDevice() (*device, error) {
	devOnce.Do(func() { dev, devErr = openDevice() })
	return dev, devErr
}

// entryRE finds the kernel entry points a PTX module declares.
var entryRE = regexp.MustCompile(`(?m)^(?:\.visible\s+)?\.entry\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// openDevice retains device 0's primary context and loads every embedded
// PTX module, resolving each .entry it declares.
func openDevice() (*device, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := &device{fns: map[string]cu.Function{}, pool: map[int64][]cu.DevicePtr{}, poison: 0xA5,
		poisonOn: os.Getenv("KVTWIN_CUDA_POISON") == "1"}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: no CUDA device")
	}
	cd, err := cu.GetDevice(0)
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGet(0): %w", err)
	}
	if d.ctx, err = cd.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: cuDevicePrimaryCtxRetain: %w", err)
	}
	if err = cu.SetCurrentContext(d.ctx); err != nil {
		return nil, fmt.Errorf("cuda: cuCtxSetCurrent: %w", err)
	}
	if d.info, err = driverInfo(cd); err != nil {
		return nil, err
	}
	files, err := fs.Glob(kernelPTX, "kernels/*.ptx")
	if err != nil {
		return nil, fmt.Errorf("cuda: embedded PTX: %w", err)
	}
	for _, f := range files {
		if err := d.loadModule(f); err != nil {
			return nil, err
		}
	}
	for name := range d.fns {
		d.info.Kernels = append(d.info.Kernels, name)
	}
	slices.Sort(d.info.Kernels)
	return d, nil
}

func (d *device) loadModule(file string) error {
	b, err := kernelPTX.ReadFile(file)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", file, err)
	}
	mod, err := cu.LoadData(string(b)) // cuModuleLoadData; cu adds the NUL PTX needs
	if err != nil {
		return fmt.Errorf("cuda: cuModuleLoadData(%s): %w", file, err)
	}
	for _, m := range entryRE.FindAllSubmatch(b, -1) {
		name := string(m[1])
		if _, dup := d.fns[name]; dup {
			return fmt.Errorf("cuda: kernel %s is defined by two modules (%s is one)", name, file)
		}
		fn, err := mod.Function(name)
		if err != nil {
			return fmt.Errorf("cuda: cuModuleGetFunction(%s) in %s: %w", name, file, err)
		}
		d.fns[name] = fn
	}
	return nil
}

func driverInfo(cd cu.Device) (DriverInfo, error) {
	name, err := cd.Name()
	if err != nil {
		return DriverInfo{}, fmt.Errorf("cuda: cuDeviceGetName: %w", err)
	}
	maj, minor, err := cd.ComputeCapability()
	if err != nil {
		return DriverInfo{}, fmt.Errorf("cuda: cuDeviceGetAttribute(compute capability): %w", err)
	}
	info := DriverInfo{Device: name, ComputeCapability: fmt.Sprintf("%d.%d", maj, minor), DriverVersion: cu.Version()}
	if v, ok := emulationVersion(); ok {
		info.Emulated, info.Driver = true, v
	} else {
		info.Driver = fmt.Sprintf("NVIDIA libcuda, driver API %d", info.DriverVersion)
	}
	return info, nil
}

// call is one op's use of the device: the device lock is held, the OS
// thread locked and the context current. Buffers it allocates go back to
// the pool when the op ends.
type call struct {
	d    *device
	op   string
	held []buffer
}

type buffer struct {
	ptr   cu.DevicePtr
	class int64
}

// run executes fn as op on the device. Errors are wrapped as "cuda: <op>: ...".
func run(op string, fn func(c *call) error) error {
	d, err := getDevice()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuda: %s: cuCtxSetCurrent: %w", op, err)
	}
	c := &call{d: d, op: op}
	err = fn(c)
	if rerr := c.release(); err == nil {
		err = rerr
	}
	return err
}

// fail wraps a driver error with the op and the step that failed.
func (c *call) fail(step string, err error) error {
	return fmt.Errorf("cuda: %s: %s: %w", c.op, step, err)
}

// sizeClass rounds n up to a power of two of at least 256 bytes.
func sizeClass(n int64) int64 {
	c := int64(256)
	for c < n {
		c <<= 1
	}
	return c
}

// alloc returns a device buffer of at least n bytes, from the pool when one
// is idle. With KVTWIN_CUDA_POISON=1 it is filled with a poison byte that
// changes on every allocation, so a kernel that leaves an output byte
// unwritten is caught by the differential suite (the byte differs from ref's).
func (c *call) alloc(n int64) (cu.DevicePtr, error) {
	if n < 0 {
		return 0, fmt.Errorf("cuda: %s: alloc of %d bytes", c.op, n)
	}
	class := sizeClass(n)
	var p cu.DevicePtr
	if free := c.d.pool[class]; len(free) > 0 {
		p = free[len(free)-1]
		c.d.pool[class] = free[:len(free)-1]
		c.d.pooled -= class
	} else {
		var err error
		if p, err = cu.MemAlloc(class); err != nil {
			return 0, c.fail(fmt.Sprintf("cuMemAlloc(%d)", class), err)
		}
	}
	c.held = append(c.held, buffer{p, class})
	if c.d.poisonOn {
		c.d.poison = c.d.poison*5 + 1 // cycles through all 256 values
		if err := cu.MemsetD8(p, c.d.poison, class); err != nil {
			return 0, c.fail("cuMemsetD8(poison)", err)
		}
	}
	return p, nil
}

// release returns the op's buffers to the pool, freeing what exceeds poolCap.
func (c *call) release() error {
	var first error
	for _, b := range c.held {
		if c.d.pooled+b.class <= poolCap {
			c.d.pool[b.class] = append(c.d.pool[b.class], b.ptr)
			c.d.pooled += b.class
			continue
		}
		if err := cu.MemFree(b.ptr); err != nil && first == nil {
			first = c.fail("cuMemFree", err)
		}
	}
	c.held = nil
	return first
}

// upload allocates a device buffer and copies b into it.
func (c *call) upload(b []byte) (cu.DevicePtr, error) {
	p, err := c.alloc(int64(len(b)))
	if err != nil || len(b) == 0 {
		return p, err
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b))); err != nil {
		return 0, c.fail(fmt.Sprintf("cuMemcpyHtoD(%d bytes)", len(b)), err)
	}
	return p, nil
}

// uploadInt64s allocates a device buffer and copies v into it.
func (c *call) uploadInt64s(v []int64) (cu.DevicePtr, error) {
	if len(v) == 0 {
		return c.alloc(0)
	}
	return c.upload(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8))
}

// download copies len(dst) bytes from device address src into dst.
func (c *call) download(dst []byte, src cu.DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), src, int64(len(dst))); err != nil {
		return c.fail(fmt.Sprintf("cuMemcpyDtoH(%d bytes)", len(dst)), err)
	}
	return nil
}

// downloadInt64s copies len(dst) int64s from device address src into dst.
func (c *call) downloadInt64s(dst []int64, src cu.DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.download(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*8), src)
}

// launch runs kernel over n work items (grid-stride: any n is covered) and
// waits for it. Every argument becomes one 8-byte slot (the convention of
// kernels/kvtwin_kernel.h): cu.DevicePtr, int64, uint64 and int as
// themselves, float32 as its bits in the low half, float64 as its bits.
func (c *call) launch(kernel string, n int64, args ...any) error {
	fn, ok := c.d.fns[kernel]
	if !ok {
		return fmt.Errorf("cuda: %s: kernel %s not loaded (make ptx; kernels/<base>.cu)", c.op, kernel)
	}
	slots := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			slots[i] = uint64(v)
		case int64:
			slots[i] = uint64(v)
		case int:
			slots[i] = uint64(int64(v))
		case uint64:
			slots[i] = v
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		case float64:
			slots[i] = math.Float64bits(v)
		default:
			return fmt.Errorf("cuda: %s: kernel %s argument %d has type %T; want an 8-byte slot type", c.op, kernel, i, a)
		}
	}
	params := make([]unsafe.Pointer, len(slots))
	for i := range slots {
		params[i] = unsafe.Pointer(&slots[i])
	}
	blocks := min(max((n+blockThreads-1)/blockThreads, 1), maxBlocks)
	c.d.stats.Launches++
	if c.d.timing {
		return c.timedLaunch(kernel, fn, int(blocks), params)
	}
	if err := fn.Launch(int(blocks), 1, 1, blockThreads, 1, 1, 0, cu.NoStream, params); err != nil {
		return c.fail("cuLaunchKernel("+kernel+")", err)
	}
	if err := cu.Synchronize(); err != nil { // kernel faults surface here
		return c.fail("cuCtxSynchronize after "+kernel, err)
	}
	return nil
}

// timedLaunch is launch with events recorded around the kernel, adding its
// device time to the statistics.
func (c *call) timedLaunch(kernel string, fn cu.Function, blocks int, params []unsafe.Pointer) error {
	start, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return c.fail("cuEventCreate", err)
	}
	defer cu.DestroyEvent(&start)
	end, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return c.fail("cuEventCreate", err)
	}
	defer cu.DestroyEvent(&end)
	if err := start.Record(cu.NoStream); err != nil {
		return c.fail("cuEventRecord", err)
	}
	if err := fn.Launch(blocks, 1, 1, blockThreads, 1, 1, 0, cu.NoStream, params); err != nil {
		return c.fail("cuLaunchKernel("+kernel+")", err)
	}
	if err := end.Record(cu.NoStream); err != nil {
		return c.fail("cuEventRecord", err)
	}
	if err := cu.Synchronize(); err != nil {
		return c.fail("cuCtxSynchronize after "+kernel, err)
	}
	ms, err := start.Elapsed(end)
	if err != nil {
		return c.fail("cuEventElapsedTime", err)
	}
	c.d.stats.KernelTime += time.Duration(ms * float64(time.Millisecond))
	return nil
}

// SetKernelTiming turns event timing of every launch on or off and resets
// the statistics. Benchmarks use it to separate device time from the host
// transfers a twin's host-in/host-out signature implies.
func SetKernelTiming(on bool) error {
	d, err := getDevice()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timing, d.stats = on, KernelStats{}
	return nil
}

// Stats returns the statistics since the last SetKernelTiming.
func Stats() (KernelStats, error) {
	d, err := getDevice()
	if err != nil {
		return KernelStats{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats, nil
}

// MeasureCopy times one device-to-device copy of n bytes (cuMemcpyDtoD
// between two pooled buffers, timed with events, best of reps) and returns
// its duration: the memory-bandwidth yardstick payload-sized ops are
// reported against.
func MeasureCopy(n int64, reps int) (time.Duration, error) {
	var best time.Duration
	err := run("copy-yardstick", func(c *call) error {
		src, err := c.alloc(n)
		if err != nil {
			return err
		}
		dst, err := c.alloc(n)
		if err != nil {
			return err
		}
		start, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return c.fail("cuEventCreate", err)
		}
		defer cu.DestroyEvent(&start)
		end, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return c.fail("cuEventCreate", err)
		}
		defer cu.DestroyEvent(&end)
		for range max(reps, 1) {
			if err := start.Record(cu.NoStream); err != nil {
				return c.fail("cuEventRecord", err)
			}
			if err := cu.MemcpyDtoD(dst, src, n); err != nil {
				return c.fail("cuMemcpyDtoD", err)
			}
			if err := end.Record(cu.NoStream); err != nil {
				return c.fail("cuEventRecord", err)
			}
			if err := cu.Synchronize(); err != nil {
				return c.fail("cuCtxSynchronize", err)
			}
			ms, err := start.Elapsed(end)
			if err != nil {
				return c.fail("cuEventElapsedTime", err)
			}
			if d := time.Duration(ms * float64(time.Millisecond)); best == 0 || d < best {
				best = d
			}
		}
		return nil
	})
	return best, err
}
