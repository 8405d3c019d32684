#!/usr/bin/env bash
# Installs what jhDNN needs to build on Debian 12 (dev machines and CI): CMake, Ninja, Google
# Benchmark, and Catch2 v3 from bookworm-backports. The CUDA toolkit and cuDNN must already be
# under /usr/local/cuda (or CUDNN_ROOT). On other systems (e.g. the Ubuntu 24.04 GPU machine, which
# has everything) it only checks.
set -euo pipefail

have_catch2() { [ -f /usr/lib/cmake/Catch2/Catch2Config.cmake ] || [ -f /usr/lib/x86_64-linux-gnu/cmake/Catch2/Catch2Config.cmake ] || [ -f /usr/local/lib/cmake/Catch2/Catch2Config.cmake ]; }
have_benchmark() { [ -f /usr/include/benchmark/benchmark.h ] || [ -f /usr/local/include/benchmark/benchmark.h ]; }

if have_catch2 && have_benchmark && command -v cmake >/dev/null && command -v ninja >/dev/null; then
  echo "setup: dependencies present"
  exit 0
fi

. /etc/os-release
if [ "${ID:-}" != debian ] || [ "${VERSION_CODENAME:-}" != bookworm ]; then
  echo "setup: missing Catch2 v3 / Google Benchmark / cmake / ninja and this is not Debian 12; install them with your package manager" >&2
  exit 1
fi
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
  $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq cmake ninja-build g++ libbenchmark-dev >/dev/null
$SUDO apt-get install -y -qq -t bookworm-backports catch2 >/dev/null
echo "setup: installed cmake, ninja, Google Benchmark, Catch2 (backports)"
