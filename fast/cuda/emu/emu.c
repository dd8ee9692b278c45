// The kvtwin host emulation driver: a libcuda.so.1 for machines without a
// GPU (CI, developers), exporting the CUDA driver entry points that
// gorgonia.org/cu links. Module load and kernel launch run the *same kernel
// sources* as the GPU (fast/cuda/kernels/*.cu, compiled for the host into
// this library): cuModuleLoadData parses the .entry names (and checks that
// every parameter is 8 bytes) out of the PTX text, cuModuleGetFunction
// resolves a name to the host stub kvtwin_host_<name> that KVT_KERNELn
// emitted, and cuLaunchKernel calls it once per (block, thread), one after
// another. See docs/gpu.md "Host emulation driver" for what this checks and
// what it cannot.
//
// Device memory is host memory with a tracked allocation table: copies on
// pointers outside a live allocation and frees of unknown pointers fail with
// CUDA_ERROR_INVALID_VALUE; each allocation has red zones on both sides,
// checked after every launch, so an out-of-bounds kernel write fails the
// launch (and, sticky as on a GPU, every later call) with
// CUDA_ERROR_ILLEGAL_ADDRESS. Fresh allocations are filled with a poison
// byte, never zeros, so a kernel that reads memory nobody wrote is caught.
//
// A test can make the emulated device faulty (and only the emulated device:
// this library is never linked into a production binary, and a real driver
// has no such switch): with KVTWIN_EMU_FAULT naming a kernel, every launch of
// that kernel flips the lowest bit of the first byte its first parameter
// points at (kvtwin's kernels take their output first), as a device whose
// memory or arithmetic went bad would. serve --verify's GPU canary test
// (TestCUDACanaryReportsAFaultyDevice) is its user.
//
// It never shadows a real driver: cuInit refuses to start where an NVIDIA
// kernel driver is present (/proc/driver/nvidia or /dev/nvidiactl), and the
// build puts it only in an ignored folder that scripts/cuda-test.sh adds to
// LD_LIBRARY_PATH when no real libcuda.so.1 is installed.
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

// kvtwin_emu_driver_version identifies this library: a test looks it up with
// dlsym(RTLD_DEFAULT) to prove which libcuda.so.1 the process loaded.
EXPORT const char *kvtwin_emu_driver_version(void) { return "kvtwin-emu 1 (sequential host emulation of the CUDA driver API)"; }

// The geometry of the emulated thread, read by the kernels' host build
// (threadIdx/blockIdx/blockDim/gridDim in kvtwin_kernel.h).
struct kvt_dim3 {
	unsigned x, y, z;
};
EXPORT struct kvt_dim3 kvtwin_emu_threadIdx, kvtwin_emu_blockIdx, kvtwin_emu_blockDim, kvtwin_emu_gridDim;

enum { REDZONE = 256, POISON = 0xA5, RZ_BYTE = 0x5A, EMU_CTX_MAGIC = 0x6b767477 };

struct alloc {
	unsigned char *base; // REDZONE | size bytes | REDZONE
	size_t size;
};

struct emu_ctx {
	int magic;
};

struct module {
	int nentries;
	char **names;
	int *nparams;
};

struct function {
	char *name;
	int nparams;
	void (*host)(void **);
};

struct event {
	struct timespec t;
	int recorded;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static CUresult sticky; // a launch fault poisons the context, as on a GPU
static struct alloc *allocs;
static size_t nallocs, capallocs;
static struct emu_ctx primary = {EMU_CTX_MAGIC};
static __thread struct emu_ctx *current;
static int retained;

static int real_driver_present(void) {
	return access("/proc/driver/nvidia/version", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

CUresult cuInit(unsigned int flags) {
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (real_driver_present()) {
		fprintf(stderr, "kvtwin emu: refusing to start: an NVIDIA kernel driver is present on this machine; "
		                "the real libcuda.so.1 must be used (the emulation never shadows it)\n");
		return CUDA_ERROR_NOT_PERMITTED;
	}
	pthread_mutex_lock(&mu);
	initialized = 1;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

// ready checks the calls that need an initialised driver and a current context.
static CUresult ready(void) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (current != &primary) return CUDA_ERROR_INVALID_CONTEXT;
	return sticky;
}

CUresult cuDriverGetVersion(int *v) {
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	*v = 11080;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!n) return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!d) return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "kvtwin host emulation (sequential, no GPU)");
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!bytes) return CUDA_ERROR_INVALID_VALUE;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = (size_t)16 << 30;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx) return CUDA_ERROR_INVALID_VALUE;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	retained++;
	pthread_mutex_unlock(&mu);
	*ctx = (CUcontext)&primary;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	CUresult r = retained > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	if (retained > 0) retained--;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (ctx != NULL && ctx != (CUcontext)&primary) return CUDA_ERROR_INVALID_CONTEXT;
	current = (struct emu_ctx *)ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) {
	if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx) return CUDA_ERROR_INVALID_VALUE;
	*ctx = (CUcontext)current;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuStreamSynchronize(CUstream s) {
	if (s != NULL) return CUDA_ERROR_INVALID_HANDLE; // only the default stream exists
	return cuCtxSynchronize();
}

// ---- memory ----

static int redzones_intact(const struct alloc *a) {
	for (size_t i = 0; i < REDZONE; i++)
		if (a->base[i] != RZ_BYTE || a->base[REDZONE + a->size + i] != RZ_BYTE) return 0;
	return 1;
}

// find returns the allocation holding [p, p+n), or NULL.
static struct alloc *find(uintptr_t p, size_t n) {
	for (size_t i = 0; i < nallocs; i++) {
		uintptr_t lo = (uintptr_t)allocs[i].base + REDZONE;
		if (p >= lo && p <= lo + allocs[i].size && n <= lo + allocs[i].size - p) return &allocs[i];
	}
	return NULL;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t size) {
	if (!dptr) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	if (r == CUDA_SUCCESS && size == 0) r = CUDA_ERROR_INVALID_VALUE;
	unsigned char *base = NULL;
	if (r == CUDA_SUCCESS) {
		// 256-byte aligned like cudaMalloc; red zones on both sides.
		base = aligned_alloc(256, ((size + 2 * REDZONE) + 255) / 256 * 256);
		if (!base) r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS && nallocs == capallocs) {
		size_t c = capallocs ? 2 * capallocs : 64;
		struct alloc *na = realloc(allocs, c * sizeof *na);
		if (!na) {
			free(base);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			allocs = na;
			capallocs = c;
		}
	}
	if (r == CUDA_SUCCESS) {
		memset(base, RZ_BYTE, REDZONE);
		memset(base + REDZONE, POISON, size);
		memset(base + REDZONE + size, RZ_BYTE, REDZONE);
		allocs[nallocs++] = (struct alloc){base, size};
		*dptr = (CUdeviceptr)(uintptr_t)(base + REDZONE);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemFree(CUdeviceptr dptr) {
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	if (r == CUDA_SUCCESS) {
		r = CUDA_ERROR_INVALID_VALUE; // not the start of a live allocation
		for (size_t i = 0; i < nallocs; i++) {
			if ((uintptr_t)allocs[i].base + REDZONE != (uintptr_t)dptr) continue;
			r = redzones_intact(&allocs[i]) ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
			free(allocs[i].base);
			allocs[i] = allocs[--nallocs];
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static CUresult copy(void *dst, const void *src, size_t n, int dst_dev, int src_dev) {
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	if (r == CUDA_SUCCESS && ((dst_dev && !find((uintptr_t)dst, n)) || (src_dev && !find((uintptr_t)src, n))))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && n > 0 && (!dst || !src)) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && n > 0) memmove(dst, src, n);
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) { return copy((void *)(uintptr_t)dst, src, n, 1, 0); }
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { return copy(dst, (const void *)(uintptr_t)src, n, 0, 1); }
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 1, 1);
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	if (r == CUDA_SUCCESS && !find((uintptr_t)dst, n)) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && n > 0) memset((void *)(uintptr_t)dst, v, n);
	pthread_mutex_unlock(&mu);
	return r;
}

// ---- modules ----

// parse_ptx collects the .entry names of a PTX text and the parameter count
// of each, rejecting a parameter that is not 8 bytes (the convention of
// kvtwin_kernel.h, which Go's launcher relies on).
static CUresult parse_ptx(const char *ptx, struct module *m) {
	const char *p = ptx;
	while ((p = strstr(p, ".entry ")) != NULL) {
		p += strlen(".entry ");
		const char *open = strchr(p, '(');
		if (!open) return CUDA_ERROR_INVALID_PTX;
		size_t len = (size_t)(open - p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
		const char *close = strchr(open, ')');
		if (!close) return CUDA_ERROR_INVALID_PTX;
		int np = 0;
		for (const char *q = open; (q = strstr(q, ".param ")) != NULL && q < close; q += 7) {
			const char *t = q + 7;
			if (strncmp(t, ".u64 ", 5) && strncmp(t, ".s64 ", 5) && strncmp(t, ".b64 ", 5) && strncmp(t, ".f64 ", 5)) {
				fprintf(stderr, "kvtwin emu: kernel %.*s: parameter %d is not 8 bytes (docs/gpu.md)\n", (int)len, p, np);
				return CUDA_ERROR_INVALID_PTX;
			}
			np++;
		}
		char **names = realloc(m->names, (size_t)(m->nentries + 1) * sizeof *names);
		if (!names) return CUDA_ERROR_OUT_OF_MEMORY;
		m->names = names;
		int *nps = realloc(m->nparams, (size_t)(m->nentries + 1) * sizeof *nps);
		if (!nps) return CUDA_ERROR_OUT_OF_MEMORY;
		m->nparams = nps;
		m->names[m->nentries] = strndup(p, len);
		if (!m->names[m->nentries]) return CUDA_ERROR_OUT_OF_MEMORY;
		m->nparams[m->nentries++] = np;
		p = close;
	}
	return m->nentries > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_PTX;
}

static void free_module(struct module *m) {
	for (int i = 0; i < m->nentries; i++) free(m->names[i]);
	free(m->names);
	free(m->nparams);
	free(m);
}

CUresult cuModuleLoadData(CUmodule *mod, const void *image) {
	if (!mod || !image) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS) return r;
	if (strncmp((const char *)image, "//", 2) != 0 && strstr((const char *)image, ".target") == NULL)
		return CUDA_ERROR_INVALID_IMAGE; // cubin/fatbin: only PTX text is emulated
	struct module *m = calloc(1, sizeof *m);
	if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
	if ((r = parse_ptx((const char *)image, m)) != CUDA_SUCCESS) {
		free_module(m);
		return r;
	}
	*mod = (CUmodule)m;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned int n, CUjit_option *o, void **v) {
	(void)n, (void)o, (void)v;
	return cuModuleLoadData(mod, image);
}

CUresult cuModuleUnload(CUmodule mod) {
	if (!mod) return CUDA_ERROR_INVALID_HANDLE;
	free_module((struct module *)mod);
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name) {
	if (!fn || !mod || !name) return CUDA_ERROR_INVALID_VALUE;
	struct module *m = (struct module *)mod;
	for (int i = 0; i < m->nentries; i++) {
		if (strcmp(m->names[i], name) != 0) continue;
		char sym[512];
		snprintf(sym, sizeof sym, "kvtwin_host_%s", name);
		void (*host)(void **) = (void (*)(void **))dlsym(RTLD_DEFAULT, sym);
		if (!host) {
			fprintf(stderr, "kvtwin emu: kernel %s is in the PTX but its host build (%s) is not in this "
			                "library: rebuild it (make emu) after adding kernels/<base>.cu\n", name, sym);
			return CUDA_ERROR_NOT_FOUND;
		}
		struct function *f = calloc(1, sizeof *f);
		if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
		f->name = m->names[i];
		f->nparams = m->nparams[i];
		f->host = host;
		*fn = (CUfunction)f; // leaked with the module's lifetime, as small as a handle
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_NOT_FOUND;
}

// ---- launch ----

// inject_fault is the test's faulty device (see the file comment): after a
// launch of the kernel KVTWIN_EMU_FAULT names, the first byte at the first
// parameter, when it points into a live allocation, has its lowest bit
// flipped. Called with mu held.
static void inject_fault(const struct function *f, void **params) {
	const char *want = getenv("KVTWIN_EMU_FAULT");
	if (!want || strcmp(want, f->name) != 0 || f->nparams < 1 || !params) return;
	uintptr_t p = (uintptr_t)(*(CUdeviceptr *)params[0]);
	if (find(p, 1)) *(unsigned char *)p ^= 1;
}

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params, void **extra) {
	pthread_mutex_lock(&mu);
	CUresult r = ready();
	struct function *f = (struct function *)fn;
	if (r == CUDA_SUCCESS && !f) r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS && stream != NULL) r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS && (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
	                          gx > 2147483647u || gy > 65535 || gz > 65535 || (unsigned long long)bx * by * bz > 1024))
		r = CUDA_ERROR_INVALID_VALUE;
	// Shared memory and barriers are not emulated (docs/gpu.md).
	if (r == CUDA_SUCCESS && (shared != 0 || extra != NULL)) r = CUDA_ERROR_NOT_SUPPORTED;
	if (r == CUDA_SUCCESS && f->nparams > 0 && !params) r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		kvtwin_emu_gridDim = (struct kvt_dim3){gx, gy, gz};
		kvtwin_emu_blockDim = (struct kvt_dim3){bx, by, bz};
		for (unsigned z = 0; z < gz; z++)
			for (unsigned y = 0; y < gy; y++)
				for (unsigned x = 0; x < gx; x++) {
					kvtwin_emu_blockIdx = (struct kvt_dim3){x, y, z};
					for (unsigned tz = 0; tz < bz; tz++)
						for (unsigned ty = 0; ty < by; ty++)
							for (unsigned tx = 0; tx < bx; tx++) {
								kvtwin_emu_threadIdx = (struct kvt_dim3){tx, ty, tz};
								f->host(params);
							}
				}
		inject_fault(f, params);
		for (size_t i = 0; i < nallocs; i++) {
			if (!redzones_intact(&allocs[i])) {
				fprintf(stderr, "kvtwin emu: kernel %s wrote outside a device allocation of %zu bytes\n", f->name,
				        allocs[i].size);
				sticky = r = CUDA_ERROR_ILLEGAL_ADDRESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

// ---- events (wall-clock: the emulation has no device timeline) ----

CUresult cuEventCreate(CUevent *ev, unsigned int flags) {
	(void)flags;
	if (!ev) return CUDA_ERROR_INVALID_VALUE;
	struct event *e = calloc(1, sizeof *e);
	if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
	*ev = (CUevent)e;
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent ev) {
	if (!ev) return CUDA_ERROR_INVALID_HANDLE;
	free(ev);
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent ev, CUstream s) {
	if (!ev) return CUDA_ERROR_INVALID_HANDLE;
	if (s != NULL) return CUDA_ERROR_INVALID_HANDLE;
	struct event *e = (struct event *)ev;
	clock_gettime(CLOCK_MONOTONIC, &e->t);
	e->recorded = 1;
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent ev) { return ev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
	if (!ms || !a || !b) return CUDA_ERROR_INVALID_VALUE;
	struct event *x = (struct event *)a, *y = (struct event *)b;
	if (!x->recorded || !y->recorded) return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((double)(y->t.tv_sec - x->t.tv_sec) * 1e3 + (double)(y->t.tv_nsec - x->t.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

// ---- errors ----

static const char *err_name(CUresult r) {
	switch (r) {
	case CUDA_SUCCESS: return "CUDA_SUCCESS";
	case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
	case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
	case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
	case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
	case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
	case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
	case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
	case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
	case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
	case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
	case CUDA_ERROR_NOT_PERMITTED: return "CUDA_ERROR_NOT_PERMITTED";
	case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
	default: return NULL;
	}
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	if (!s) return CUDA_ERROR_INVALID_VALUE;
	*s = err_name(r);
	return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **s) { return cuGetErrorName(r, s); }

// kvtwin_emu_unsupported is what every other driver entry point returns (the
// generated stubs.c): cu links ~160 names; the emulation implements the ones
// fast/cuda calls.
EXPORT CUresult kvtwin_emu_unsupported(const char *name) {
	fprintf(stderr, "kvtwin emu: %s is not emulated\n", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}
