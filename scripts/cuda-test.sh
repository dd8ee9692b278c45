#!/bin/sh
# make test-cuda: run the cuda-tagged suite (fast/cuda and equiv with
# KVTWIN_IMPL=cuda) against the host emulation driver, or against the real
# driver when one is installed. The emulation is put on LD_LIBRARY_PATH only
# when no real libcuda.so.1 exists on this machine, so it can never shadow
# one (the notes record a CPU-CI stub that did, and crashed later GPU
# tests); KVTWIN_CUDA_DRIVER tells the tests which one to expect, and
# TestLoadedDriverIsTheExpectedOne checks it from inside the process.
# Needs CGO_CFLAGS/CGO_LDFLAGS (the Makefile's CUDA_ENV) and EMU_DIR.
set -eu
: "${EMU_DIR:?EMU_DIR must name the folder holding the emulation libcuda.so.1 (make emu)}"
real=
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	real=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
else
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64; do
		if [ -e "$d/libcuda.so.1" ]; then real=$d/libcuda.so.1; break; fi
	done
fi
if [ -n "$real" ]; then
	echo "cuda-test: real driver $real found: running the cuda suite on it (no emulation)"
	export KVTWIN_CUDA_DRIVER=real
	case "$real" in /usr/local/nvidia/*) export LD_LIBRARY_PATH="$(dirname "$real")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
else
	[ -f "$EMU_DIR/libcuda.so.1" ] || { echo "cuda-test: $EMU_DIR/libcuda.so.1 missing: run make emu"; exit 1; }
	echo "cuda-test: no libcuda.so.1 on this machine: running the cuda suite on the host emulation ($EMU_DIR)"
	export KVTWIN_CUDA_DRIVER=emulation
	export LD_LIBRARY_PATH="$(cd "$EMU_DIR" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# equiv's tests that run every implementation the build has (selectedImpls;
# TestCUDARunCoversEveryTestThatSelectsImplementations keeps the list whole).
EQUIV_IMPL_TESTS='^(TestAllImplementations|TestHostileInputsAreRejectedOrServedWithinBounds|TestKVEvHostileVariantsOfTheTables|TestPollingOpsStopWhenCanceled|TestRadixScriptTraceIsBoundedByLimits)$'
# The emulation (or a real driver) is always usable here: a withheld CUDA
# implementation (failed self-test, module load) must fail, not skip.
export KVTWIN_CUDA_POISON=1 KVTWIN_IMPL=cuda KVTWIN_REQUIRE_CUDA=1
${GO:-go} test -tags cuda -count=1 ${CUDA_TEST_FLAGS:-} ./fast/cuda/... || exit $?
# In equiv, only the tests that iterate the catalog's implementations reach
# the CUDA twins (KVTWIN_IMPL=cuda selects them); the rest compare ref with
# fast, which make test-full already ran.
${GO:-go} test -tags cuda -count=1 ${CUDA_TEST_FLAGS:-} -run "$EQUIV_IMPL_TESTS" ./equiv/ || exit $?
# The server on --impl cuda under concurrent clients (every response equal to
# ref's fixture result; one shared CUDA context), small here; gpu-check runs
# it at full size on the device.
log=$(mktemp)
rc=0
KVTWIN_GPU_LOAD_CLIENTS=8 KVTWIN_GPU_LOAD_ROUNDS=1 \
	${GO:-go} test -tags cuda -count=1 ${CUDA_TEST_FLAGS:-} -run '^(TestCUDAServerUnderConcurrentLoad|TestCUDACanaryReportsAFaultyDevice)$' -v ./server/ >"$log" 2>&1 || rc=$?
grep -E '^(--- |ok|FAIL|PASS)|cuda server|_test.go' "$log" || true
rm -f "$log"
exit $rc
