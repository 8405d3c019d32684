#!/usr/bin/env bash
# The main job: set up, build, and run every implemented jhDNN algorithm against cuDNN on the
# default layer suite, printing one comparison table. Needs a GPU for the last step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/examples/jhdnn_compare "$@"
