// kvtwin_kernel.h — the kernel-authoring convention of fast/cuda (docs/gpu.md
// "Adding a kernel"). Every kernels/<base>.cu includes this header and is
// compiled twice from the same source:
//   - by nvcc to PTX (make ptx), the code the GPU runs;
//   - by g++ for the host (make emu), linked into the emulation driver
//     (fast/cuda/emu), which runs each launch sequentially, block by block,
//     thread by thread.
// Sequential emulation is exact only for kernels that need no barriers and no
// shared memory: write every kernel grid-stride (KVT_FOR), each index's
// result depending only on inputs and on atomics (which commute). A kernel
// that needs __syncthreads or __shared__ must instead get a host emulation of
// its block-level contract and be listed in docs/gpu.md.
//
// Arguments: every kernel parameter is exactly 8 bytes (pointers, long long,
// unsigned long long, double; a float is passed as its bits in an unsigned
// long long, read with kvt_f32). Go's launcher (fast/cuda, Launch) passes
// 8-byte slots; the host build static_asserts the width of every parameter
// and the emulation checks the PTX .param widths when it loads the module.
#ifndef KVTWIN_KERNEL_H
#define KVTWIN_KERNEL_H

typedef long long i64;
typedef unsigned long long u64;

#ifdef __CUDACC__

#define KVT_DEVICE static __device__ __forceinline__
// The global index of this thread and the number of threads in the grid.
#define KVT_TID ((i64)blockIdx.x * (i64)blockDim.x + (i64)threadIdx.x)
#define KVT_NTHREADS ((i64)gridDim.x * (i64)blockDim.x)
KVT_DEVICE float kvt_f32(u64 bits) { return __uint_as_float((unsigned)bits); }

#define KVT_PARAM_(T, a) T a
#define KVT_KERNEL_(name, params, unpack) extern "C" __global__ void name params

#else // host emulation (g++ -x c++, no FMA contraction: see the Makefile's EMU_FLAGS)

#include <cstring>
#include <cstdint>

// The launch geometry of the thread being emulated, set by the emulation's
// cuLaunchKernel before each call of a kernel body.
struct kvt_dim3 {
	unsigned x, y, z;
};
extern "C" {
extern kvt_dim3 kvtwin_emu_threadIdx, kvtwin_emu_blockIdx, kvtwin_emu_blockDim, kvtwin_emu_gridDim;
}
#define threadIdx kvtwin_emu_threadIdx
#define blockIdx kvtwin_emu_blockIdx
#define blockDim kvtwin_emu_blockDim
#define gridDim kvtwin_emu_gridDim
#define __restrict__ __restrict
#define KVT_DEVICE static inline
#define KVT_TID ((i64)blockIdx.x * (i64)blockDim.x + (i64)threadIdx.x)
#define KVT_NTHREADS ((i64)gridDim.x * (i64)blockDim.x)

KVT_DEVICE float kvt_f32(u64 bits) {
	unsigned u = (unsigned)bits;
	float f;
	std::memcpy(&f, &u, 4);
	return f;
}
KVT_DEVICE float __uint_as_float(unsigned u) {
	float f;
	std::memcpy(&f, &u, 4);
	return f;
}
KVT_DEVICE unsigned __float_as_uint(float f) {
	unsigned u;
	std::memcpy(&u, &f, 4);
	return u;
}
// Atomics: the emulation runs threads one after another, so a plain
// read-modify-write is atomic. Each returns the old value, as CUDA's do.
KVT_DEVICE i64 atomicMin(i64 *p, i64 v) { i64 o = *p; if (v < o) *p = v; return o; }
KVT_DEVICE i64 atomicMax(i64 *p, i64 v) { i64 o = *p; if (v > o) *p = v; return o; }
KVT_DEVICE u64 atomicAdd(u64 *p, u64 v) { u64 o = *p; *p = o + v; return o; }
KVT_DEVICE unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
KVT_DEVICE int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }

#define KVT_PARAM_(T, a) T a
// The host stub: the emulation's cuModuleGetFunction finds it with
// dlsym("kvtwin_host_<name>") and cuLaunchKernel calls it once per thread
// with the kernelParams array (one pointer per 8-byte slot).
#define KVT_KERNEL_(name, params, unpack)                                             \
	static void name params;                                                            \
	extern "C" __attribute__((visibility("default"))) void kvtwin_host_##name(void **kvt_p) { \
		name unpack;                                                                      \
	}                                                                                   \
	static void name params

#endif

#define KVT_CHECK8_(T) static_assert(sizeof(T) == 8, "kernel parameters must be 8 bytes (docs/gpu.md)")
#define KVT_ARG_(i, T) (*(T *)kvt_p[i])

// KVT_KERNELn(name, T1, a1, ..., Tn, an) declares kernel `name` with n
// 8-byte parameters; the body follows in braces.
#define KVT_KERNEL1(name, T1, a1) KVT_CHECK8_(T1); \
	KVT_KERNEL_(name, (T1 a1), (KVT_ARG_(0, T1)))
#define KVT_KERNEL2(name, T1, a1, T2, a2) KVT_CHECK8_(T1); KVT_CHECK8_(T2); \
	KVT_KERNEL_(name, (T1 a1, T2 a2), (KVT_ARG_(0, T1), KVT_ARG_(1, T2)))
#define KVT_KERNEL3(name, T1, a1, T2, a2, T3, a3) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3)))
#define KVT_KERNEL4(name, T1, a1, T2, a2, T3, a3, T4, a4) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4)))
#define KVT_KERNEL5(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5)))
#define KVT_KERNEL6(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5, T6, a6) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); KVT_CHECK8_(T6); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5, T6 a6), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5), KVT_ARG_(5, T6)))
#define KVT_KERNEL7(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5, T6, a6, T7, a7) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); KVT_CHECK8_(T6); KVT_CHECK8_(T7); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5, T6 a6, T7 a7), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5), KVT_ARG_(5, T6), KVT_ARG_(6, T7)))
#define KVT_KERNEL8(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5, T6, a6, T7, a7, T8, a8) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); KVT_CHECK8_(T6); KVT_CHECK8_(T7); KVT_CHECK8_(T8); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5, T6 a6, T7 a7, T8 a8), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5), KVT_ARG_(5, T6), KVT_ARG_(6, T7), KVT_ARG_(7, T8)))
#define KVT_KERNEL9(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5, T6, a6, T7, a7, T8, a8, T9, a9) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); KVT_CHECK8_(T6); KVT_CHECK8_(T7); KVT_CHECK8_(T8); KVT_CHECK8_(T9); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5, T6 a6, T7 a7, T8 a8, T9 a9), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5), KVT_ARG_(5, T6), KVT_ARG_(6, T7), KVT_ARG_(7, T8), KVT_ARG_(8, T9)))
#define KVT_KERNEL10(name, T1, a1, T2, a2, T3, a3, T4, a4, T5, a5, T6, a6, T7, a7, T8, a8, T9, a9, T10, a10) KVT_CHECK8_(T1); KVT_CHECK8_(T2); KVT_CHECK8_(T3); KVT_CHECK8_(T4); KVT_CHECK8_(T5); KVT_CHECK8_(T6); KVT_CHECK8_(T7); KVT_CHECK8_(T8); KVT_CHECK8_(T9); KVT_CHECK8_(T10); \
	KVT_KERNEL_(name, (T1 a1, T2 a2, T3 a3, T4 a4, T5 a5, T6 a6, T7 a7, T8 a8, T9 a9, T10 a10), (KVT_ARG_(0, T1), KVT_ARG_(1, T2), KVT_ARG_(2, T3), KVT_ARG_(3, T4), KVT_ARG_(4, T5), KVT_ARG_(5, T6), KVT_ARG_(6, T7), KVT_ARG_(7, T8), KVT_ARG_(8, T9), KVT_ARG_(9, T10)))

// kvt_w16 is a 16-byte word: kernels that move whole 16-byte words load
// and store them as one ld/st.global.v2.u64 per thread (device buffers are
// 256-byte aligned; rows start at multiples of the word).
struct alignas(16) kvt_w16 {
	u64 lo, hi;
};

// KVT_FOR(i, n) is the grid-stride loop every kernel is written with: this
// thread's indices KVT_TID, KVT_TID+KVT_NTHREADS, ... below n.
#define KVT_FOR(i, n) for (i64 i = KVT_TID; i < (i64)(n); i += KVT_NTHREADS)

#endif
