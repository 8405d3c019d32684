#!/usr/bin/env bash
# Session 13, check of the spdnn_gpu refactor (fused_head): test_sparse (every case; the paths through
# run_inference included) and spdnn_infer N = 1024 on the resident, persistent and graph paths, exact.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f4; mkdir -p $O; B=build-gpu; t0=$(date +%s)
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
timeout 100 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release > $O/build.txt 2>&1 && cmake --build $B -j 16 --target spdnn_infer test_sparse >> $O/build.txt 2>&1"
echo "build rc $? ($(( $(date +%s) - t0 )) s)"
timeout 80 $B/tests/test_sparse > $O/test_sparse.txt 2>&1; echo "test_sparse rc $? ($(( $(date +%s) - t0 )) s)"; tail -3 $O/test_sparse.txt
timeout 40 $B/examples/spdnn_infer --width 1024 --layers 120 --path resident,persistent,graph --validate yes > $O/infer.txt 2>&1
echo "infer rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "^ +1024|path" $O/infer.txt
tar czf $OUT/f4.tgz -C /tmp f4
