// Host side shared by the two library SGEMM launchers (sgemm.cu for sgemm_kernel.cuh,
// sgemm_async.cu for sgemm_async.cuh): copying a GemmDesc's sizes, pointers, leading dimensions
// and batch strides into a kernel's Params. The two Params structs differ in their other fields
// (tiling, split, c_vec's rule), which each launcher sets itself.
#pragma once

#include <cstdint>

#include "gemm/gemm.h"

namespace jhdnn::gemm {

template <class Params>
void set_problem_params(Params& prm, const GemmDesc& d, int64_t batches) {
  prm.m = int(d.m);
  prm.n = int(d.n);
  prm.k = int(d.k);
  prm.a = d.a;
  prm.b = d.b;
  prm.c = d.c;
  prm.lda = d.lda;
  prm.ldb = d.ldb;
  prm.ldc = d.ldc;
  prm.batch_count = batches;
  prm.batch_inner = d.batch_inner;
  prm.a_outer = d.a_outer;
  prm.a_inner = d.a_inner;
  prm.b_outer = d.b_outer;
  prm.b_inner = d.b_inner;
  prm.c_outer = d.c_outer;
  prm.c_inner = d.c_inner;
}

}  // namespace jhdnn::gemm
