#!/bin/sh
# The GPU check (make gpu-check copies this to gpu-bin/gpu-check.sh next to
# the cuda-tagged test binaries). Run from the repository root on a machine
# with an NVIDIA GPU and driver (no Go needed):
#     sh gpu-bin/gpu-check.sh
# It prints the glibc, driver and device; runs the cuda-tagged suite with
# KVTWIN_REQUIRE_CUDA=1 (a skipped CUDA implementation fails) on the real
# driver; then the benchmarks; and writes under $OUT (default gpu-bin/out):
#   env.txt, cuda-test.log, equiv-test.log, bench.log, bench.json, kernel-bench.log,
#   server-load.log, server-load.json, summary.json
# Budget: about 4 minutes on an H200; every step has its own timeout.
set -u
bin=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$bin/.." && pwd)
out=${OUT:-$bin/out}
mkdir -p "$out"
cd "$root"

# The real libcuda.so.1: ld cache first, then the usual driver folders.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
		if [ -e "$d/libcuda.so.1" ]; then
			export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
			break
		fi
	done
fi
{
	echo "== date: $(date -u +%FT%TZ)"
	echo "== glibc: $(ldd --version 2>&1 | head -1)"
	echo "== nvidia-smi:"
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
	echo "== /proc/driver/nvidia/version:"
	cat /proc/driver/nvidia/version 2>&1
	echo "== libcuda.so.1 (ld cache / LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}):"
	ldconfig -p 2>/dev/null | grep 'libcuda\.so' || echo "(not in the ld cache)"
	echo "== binaries:"
	ldd "$bin/cuda.test" 2>&1
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# KVTWIN_CUDA_DRIVER=emulation (with LD_LIBRARY_PATH=.cache/emu) dry-runs this script without a GPU.
export KVTWIN_REQUIRE_CUDA=1 KVTWIN_CUDA_DRIVER=${KVTWIN_CUDA_DRIVER:-real} KVTWIN_CUDA_POISON=1 KVTWIN_IMPL=cuda
echo "== cuda-tagged suite: fast/cuda"
(cd fast/cuda && timeout 120 "$bin/cuda.test" -test.v -test.count=1 -test.timeout=110s) >"$out/cuda-test.log" 2>&1
rc_cuda=$?
grep -E '^(--- |ok|PASS|FAIL|SKIP)|driver:' "$out/cuda-test.log" | head -40
echo "== cuda-tagged suite: equiv (KVTWIN_IMPL=cuda)"
(cd equiv && timeout 150 "$bin/equiv.test" -test.v -test.count=1 -test.timeout=140s) >"$out/equiv-test.log" 2>&1
rc_equiv=$?
grep -E "^    --- (PASS|FAIL|SKIP): TestAllImplementations/|^(ok|PASS|FAIL)" "$out/equiv-test.log" | head -60
echo "== benchmarks"
unset KVTWIN_CUDA_POISON
(cd fast/cuda && KVTWIN_GPU_BENCH_OUT="$out/bench.json" timeout 90 "$bin/cuda.test" -test.run '^TestGPUBenchReport$' \
	-test.v -test.count=1 -test.timeout=80s) >"$out/bench.log" 2>&1
rc_bench=$?
grep -E 'bench_cuda_test|^(--- |ok|PASS|FAIL)' "$out/bench.log" | head -40
echo "== kernel-only benchmarks (inputs uploaded once; launch + sync vs a same-run device copy)"
(cd fast/cuda && timeout 90 "$bin/cuda.test" -test.run '^$' -test.bench '^BenchmarkKernel' -test.benchtime 20x \
	-test.count=1 -test.timeout=80s) >"$out/kernel-bench.log" 2>&1
rc_kbench=$?
grep -E '^(Benchmark|ok|PASS|FAIL)' "$out/kernel-bench.log" | head -20
echo "== the server on --impl cuda under 64 concurrent clients (every response equal to ref's fixture; one CUDA context)"
(cd server && KVTWIN_GPU_LOAD_CLIENTS=64 KVTWIN_GPU_LOAD_ROUNDS=4 KVTWIN_GPU_LOAD_OUT="$out/server-load.json" \
	timeout 120 "$bin/server.test" -test.run '^(TestCUDAServerUnderConcurrentLoad|TestCUDACanaryReportsAFaultyDevice)$' -test.v -test.count=1 -test.timeout=110s) >"$out/server-load.log" 2>&1
rc_load=$?
grep -E '^(--- |ok|PASS|FAIL)|cuda server' "$out/server-load.log" | head -20
printf '{"rc_cuda_test":%d,"rc_equiv_test":%d,"rc_bench":%d,"rc_kernel_bench":%d,"rc_server_load":%d}\n' "$rc_cuda" "$rc_equiv" "$rc_bench" "$rc_kbench" "$rc_load" | tee "$out/summary.json"
[ "$rc_cuda" -eq 0 ] && [ "$rc_equiv" -eq 0 ] && [ "$rc_bench" -eq 0 ] && [ "$rc_kbench" -eq 0 ] && [ "$rc_load" -eq 0 ]
