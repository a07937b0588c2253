#!/usr/bin/env bash
# Runs every test of Tessera: formatting, lints, the whole workspace with the GPU features
# (OpenCL through PoCL on the CPU, CUDA compiled with NVRTC + ptxas without a GPU), and the
# heavy or instrumented suites (sanitizers, >2^31-cell grid).
#
# Installs what the tests need when it is missing: PoCL + the OpenCL ICD loader and OpenMPI
# (apt-get),
# NVRTC + ptxas (pip), and maturin, NumPy, pytest and matplotlib for the Python package (pip,
# into target/python-venv). With CI=true a missing piece is an error, never a silent skip.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n==> %s\n' "$*"; }

need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so ] || [ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 ] || need_apt+=(ocl-icd-opencl-dev)
ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 || need_apt+=(pocl-opencl-icd)
command -v clinfo >/dev/null || need_apt+=(clinfo)
# MPI for the distributed runs (the `mpi` feature): OpenMPI, and libclang for its bindings.
command -v mpirun >/dev/null && [ -e /usr/include/x86_64-linux-gnu/openmpi/mpi.h -o -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] \
  || need_apt+=(libopenmpi-dev openmpi-bin)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq "${need_apt[@]}" >/dev/null
fi

python=$(command -v python3 || command -v python)
nvidia_dir() { "$python" - <<'PY' 2>/dev/null
import importlib.util, os
spec = importlib.util.find_spec("nvidia")
print(list(spec.submodule_search_locations)[0] if spec else "")
PY
}
cu=""
for d in "$(nvidia_dir)"/cu13 "$(nvidia_dir)"/cuda_nvrtc; do [ -e "$d/lib/libnvrtc.so.13" ] && cu=$d; done
if [ -z "$cu" ] || [ ! -x "$(nvidia_dir)/cu13/bin/ptxas" ]; then
  say "installing NVRTC and ptxas from PyPI"
  "$python" -m pip install -q nvidia-cuda-nvrtc nvidia-cuda-nvcc
  cu="$(nvidia_dir)/cu13"
fi
export TESSERA_CUDA_HOME="$cu"
export LD_LIBRARY_PATH="$cu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$cu/bin:$PATH"
# mpirun refuses root without these; the MPI tests run on 2 cores with --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A fresh, private kernel cache per run keeps the cache tests honest.
export TESSERA_CACHE_DIR="${TESSERA_CACHE_DIR:-$(mktemp -d)/tessera-cache}"

say "formatting"
cargo fmt --all -- --check

say "lints"
cargo clippy --workspace --all-targets --all-features -- -D warnings

say "tests (workspace, all features)"
cargo test --workspace --all-features

say "the Python package (built with maturin into a private virtual environment; pytest)"
venv=target/python-venv
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check maturin numpy pytest matplotlib
VIRTUAL_ENV="$PWD/$venv" PATH="$PWD/$venv/bin:$PATH" \
  "$venv/bin/maturin" develop -q -m crates/tessera-python/Cargo.toml
TESSERA_BIN="$PWD/target/debug/tessera" MPLBACKEND=Agg \
  "$venv/bin/python" -m pytest -q crates/tessera-python/tests

if [ "$(uname -m)" = x86_64 ]; then
  # The workspace tests ran the host's own target; the other x86 targets this machine runs
  # get the CPU differential matrix too (one configuration per strategy).
  isas=(sse2)
  grep -qw avx2 /proc/cpuinfo && isas=(avx2 sse2)
  for isa in "${isas[@]}"; do
    say "the CPU differential matrix for the $isa target"
    TESSERA_TARGET_ISA=$isa TESSERA_CPU_MATRIX=quick cargo test -p tessera-cpu --test cpu_matrix
  done
fi

say "generated C under AddressSanitizer + UndefinedBehaviorSanitizer"
cargo test -p tessera-cpu --test cpu_sanitize -- --ignored

say "a grid of more than 2^31 cells (2 GiB)"
# The test profile (the kernel is generated C at -O3 either way): no release build of the crates.
cargo test -p tessera-cpu --test cpu_large -- --ignored
