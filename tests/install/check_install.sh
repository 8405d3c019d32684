#!/usr/bin/env bash
# Installs the built jhDNN into a temporary prefix and builds a downstream project against it
# with find_package(jhdnn): the package config works for a user.
set -euo pipefail
build_dir=$1 src_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src_dir/tests/install" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
test -x "$tmp/consumer/consumer"
echo "find_package(jhdnn) consumer built and linked against $tmp/prefix"
