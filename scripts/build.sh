#!/usr/bin/env bash
# Configures and builds everything (library, tests, benchmarks, examples) into ${BUILD_DIR:-build}.
# Extra arguments go to CMake, e.g. -DCMAKE_CUDA_ARCHITECTURES="80;90a".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export PATH=$PATH:/usr/local/cuda/bin
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
