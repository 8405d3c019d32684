#!/usr/bin/env bash
# The main job: set up, build, and run jhdnn-bench: every implemented jhDNN algorithm against every
# cuDNN algorithm on the default layer suite, verified and timed, printed as one table. Arguments go
# to jhdnn-bench (e.g. --csv=out.csv, --suite=bench/suites/public-nets.txt --mode=verify).
# Needs a GPU for the last step (without one jhdnn-bench says why and exits 77).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/tools/jhdnn-bench/jhdnn-bench "$@"
