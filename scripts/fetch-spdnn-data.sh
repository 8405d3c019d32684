#!/usr/bin/env bash
# Puts the Sparse DNN Graph Challenge data (N = 1024) where the sparse tests and spdnn_infer look by
# default: <repo>/data/spdnn/ (git-ignored; JHDNN_SPDNN_DIR overrides the location at run time).
#
#   scripts/fetch-spdnn-data.sh [SRC]   SRC defaults to ../shared/spdnn (next to the repository)
#
# Copies the image file, the truth files and the network tarball, and extracts the tarball so that
# data/spdnn/neuron1024/n1024-l{1..120}.tsv exist. Run again it only extracts what is missing, so on
# the GPU machine (where only data/spdnn/*.tar.gz and the small files are carried) it just unpacks.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:-$repo/../shared/spdnn}"
dst="$repo/data/spdnn"
mkdir -p "$dst"
if [ -d "$src" ]; then
  for f in neuron1024.tar.gz sparse-images-1024-first1200.tsv neuron1024-l120-categories-first1200.tsv \
           neuron1024-l120-categories.tsv README.md; do
    if [ -f "$src/$f" ] && ! cmp -s "$src/$f" "$dst/$f"; then cp -f "$src/$f" "$dst/$f"; chmod u+w "$dst/$f"; fi
  done
elif [ ! -f "$dst/neuron1024.tar.gz" ]; then
  echo "fetch-spdnn-data: neither $src nor $dst/neuron1024.tar.gz exists" >&2
  exit 1
fi
if [ ! -f "$dst/neuron1024/n1024-l120.tsv" ]; then
  tar -xzf "$dst/neuron1024.tar.gz" -C "$dst"
fi
n=$(ls "$dst"/neuron1024/n1024-l*.tsv | wc -l)
echo "fetch-spdnn-data: $dst ready ($n layer files, $(du -sh "$dst" | cut -f1))"
