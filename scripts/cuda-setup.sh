#!/bin/sh
# make cuda-deps: unpack, without installing any package, what the CUDA path
# needs on a Debian 12 (bookworm) amd64 machine with no GPU, into CUDA_ROOT
# (default $HOME/.cache/kvtwin/cuda-11.8; shared by every checkout):
#   nvidia-cuda-dev     -> cuda.h + CUDA C++ headers, stubs/libcuda.so (link stub)
#   nvidia-cuda-toolkit -> nvcc, cicc, ptxas, libdevice
#   libcu++-dev         -> <cuda/std/...>
# Idempotent (a complete CUDA_ROOT is left alone). Any failure — no network,
# no non-free mirror, a short download — exits non-zero with a message: CI
# must fail loudly rather than skip the CUDA suite. The system's apt
# configuration is not changed (a private apt state directory is used).
# Recipe and measurements: shared/design/cuda.md §1-§3.
set -eu
CUDA_ROOT=${CUDA_ROOT:-$HOME/.cache/kvtwin/cuda-11.8}
NVCC="$CUDA_ROOT/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
stamp="$CUDA_ROOT/.complete"
if [ -f "$stamp" ] && [ -x "$NVCC" ] && [ -f "$CUDA_ROOT/usr/include/cuda.h" ] &&
	[ -f "$CUDA_ROOT/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" ]; then
	echo "cuda-deps: already in $CUDA_ROOT"
	exit 0
fi
fail() {
	echo "cuda-deps: FAILED: $*" >&2
	echo "cuda-deps: the CUDA headers and toolchain are required by 'make test' (the cuda-tagged suite);" >&2
	echo "cuda-deps: nothing is skipped silently. Fix the fetch (network / Debian non-free mirror) and rerun." >&2
	exit 1
}
command -v apt-get >/dev/null || fail "apt-get not found (a Debian 12 machine is expected)"
command -v dpkg-deb >/dev/null || fail "dpkg-deb not found"
work=$(mktemp -d)
chmod 755 "$work" # _apt must be able to write the downloads
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources" "$work/lists/partial" "$work/debs"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then # deb822 (Debian 12 images)
	sed 's/^Components:.*/Components: main contrib non-free/' \
		/etc/apt/sources.list.d/debian.sources >"$work/sources/debian.sources"
elif [ -f /etc/apt/sources.list ]; then # one-line format
	sed -E 's/^(deb[[:space:]].*[[:space:]])main([[:space:]].*)?$/\1main contrib non-free/' \
		/etc/apt/sources.list >"$work/sources/debian.list"
else
	fail "no apt sources found"
fi
APT="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/sources -o Dir::State::Lists=$work/lists"
# shellcheck disable=SC2086
apt-get $APT -qq update || fail "apt-get update (non-free indexes)"
# shellcheck disable=SC2086
(cd "$work/debs" && apt-get $APT -qq download nvidia-cuda-toolkit nvidia-cuda-dev libcu++-dev) ||
	fail "apt-get download nvidia-cuda-toolkit nvidia-cuda-dev libcu++-dev"
rm -rf "$CUDA_ROOT.partial"
mkdir -p "$CUDA_ROOT.partial"
dpkg -x "$work"/debs/nvidia-cuda-toolkit_*.deb "$CUDA_ROOT.partial" || fail "unpack nvidia-cuda-toolkit"
dpkg -x "$work"/debs/libcu++-dev_*.deb "$CUDA_ROOT.partial" || fail "unpack libcu++-dev"
# The 774 MB .deb: keep only the headers and the libcuda link stub (~14 MB).
dpkg-deb --fsys-tarfile "$work"/debs/nvidia-cuda-dev_*.deb |
	tar -x -C "$CUDA_ROOT.partial" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/libcuda.so' ||
	fail "unpack nvidia-cuda-dev headers and stub"
# The packaged nvcc.profile is an absolute link to /etc/nvcc.profile: make it relocatable.
prof="$CUDA_ROOT.partial/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
rm -f "$prof"
cat >"$prof" <<'PROFILE'
NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice
PATH		+= $(_HERE_):$(_HERE_)/../../../bin:
INCLUDES	+= "-I$(_HERE_)/../../../include" $(_SPACE_)
LIBRARIES	=+ $(_SPACE_) "-L$(_HERE_)/../../x86_64-linux-gnu/stubs"
PROFILE
rm -rf "$CUDA_ROOT"
mv "$CUDA_ROOT.partial" "$CUDA_ROOT"
"$NVCC" --version | tail -1 || fail "nvcc does not run"
touch "$stamp"
echo "cuda-deps: done; CUDA_ROOT=$CUDA_ROOT"
