#!/usr/bin/env bash
# cuobjdump and nvdisasm for a machine whose CUDA toolkit install lacks them (this project's CI and development
# machines: nvcc and ptxas only), from NVIDIA's wheels on PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; 13.5
# when written, session 38), unpacked into out/sass-tools (git-ignored). Prints the bin folder. Then, e.g.:
#   CUOBJDUMP=$(scripts/fetch-sass-tools.sh)/cuobjdump scripts/sass-check-sparse.sh build/src/libjhdnn.so
# The disassembler only reads the cubins that the project's own nvcc built; nothing here is linked or shipped.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=out/sass-tools
bin=$(find "$dest" -type f -name cuobjdump -path '*/bin/*' 2>/dev/null | head -1 || true)
if [ -z "$bin" ]; then
  mkdir -p "$dest/wheels"
  python3 -m pip download --quiet --no-deps -d "$dest/wheels" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2
  for w in "$dest"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dest"; done
  bin=$(find "$dest" -type f -name cuobjdump -path '*/bin/*' | head -1)
  chmod +x "$(dirname "$bin")"/*
fi
dirname "$bin"
