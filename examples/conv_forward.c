/* A complete jhDNN program in C: one fp32 NCHW 3x3 convolution through the public API, checked
 * against a direct CPU loop. Build: see examples/CMakeLists.txt; run: build/examples/conv_forward */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <jhdnn/jhdnn.h>

#define CHECK(call)                                                             \
  do {                                                                          \
    jhdnnStatus_t s_ = (call);                                                  \
    if (s_ != JHDNN_STATUS_SUCCESS) {                                           \
      char msg_[512];                                                           \
      jhdnnGetLastErrorString(msg_, sizeof msg_);                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, jhdnnGetErrorString(s_), msg_); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

#define CUDA(call)                                                                  \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));            \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main(void) {
  enum { N = 2, C = 3, H = 9, W = 11, K = 4, R = 3, S = 3 };
  jhdnnHandle_t h;
  jhdnnTensorDescriptor_t xd, yd;
  jhdnnFilterDescriptor_t wd;
  jhdnnConvolutionDescriptor_t cd;
  int n, c, p, q, devices = 0;

  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("conv_forward: no CUDA device, skipping\n");
    return 77; /* CTest's SKIP_RETURN_CODE for this example */
  }
  CHECK(jhdnnCreate(&h));
  CHECK(jhdnnCreateTensorDescriptor(&xd));
  CHECK(jhdnnCreateTensorDescriptor(&yd));
  CHECK(jhdnnCreateFilterDescriptor(&wd));
  CHECK(jhdnnCreateConvolutionDescriptor(&cd));
  CHECK(jhdnnSetTensor4dDescriptor(xd, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, N, C, H, W));
  CHECK(jhdnnSetFilter4dDescriptor(wd, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, K, C, R, S));
  CHECK(jhdnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT));
  CHECK(jhdnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &c, &p, &q));
  CHECK(jhdnnSetTensor4dDescriptor(yd, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, n, c, p, q));

  const size_t nx = (size_t)N * C * H * W, nw = (size_t)K * C * R * S, ny = (size_t)n * c * p * q;
  float *hx = malloc(nx * sizeof(float)), *hw = malloc(nw * sizeof(float)), *hy = malloc(ny * sizeof(float));
  for (size_t i = 0; i < nx; ++i) hx[i] = (float)((i * 7919) % 13) - 6.0f;
  for (size_t i = 0; i < nw; ++i) hw[i] = (float)((i * 104729) % 5) - 2.0f;
  float *x, *w, *y;
  CUDA(cudaMalloc((void**)&x, nx * sizeof(float)));
  CUDA(cudaMalloc((void**)&w, nw * sizeof(float)));
  CUDA(cudaMalloc((void**)&y, ny * sizeof(float)));
  CUDA(cudaMemcpy(x, hx, nx * sizeof(float), cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(w, hw, nw * sizeof(float), cudaMemcpyHostToDevice));

  const float alpha = 1.0f, beta = 0.0f;
  CHECK(jhdnnConvolutionForward(h, &alpha, xd, x, wd, w, cd, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, NULL, 0, &beta,
                                yd, y));
  CUDA(cudaMemcpy(hy, y, ny * sizeof(float), cudaMemcpyDeviceToHost));

  /* Integer inputs: every output is exact in fp32. */
  int bad = 0;
  for (int in = 0; in < n; ++in)
    for (int k = 0; k < K; ++k)
      for (int op = 0; op < p; ++op)
        for (int oq = 0; oq < q; ++oq) {
          double acc = 0;
          for (int ic = 0; ic < C; ++ic)
            for (int r = 0; r < R; ++r)
              for (int s = 0; s < S; ++s) {
                const int ih = op - 1 + r, iw = oq - 1 + s;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += hx[((in * C + ic) * H + ih) * W + iw] * hw[((k * C + ic) * R + r) * S + s];
              }
          if (fabs(acc - hy[((in * K + k) * p + op) * q + oq]) > 0) ++bad;
        }
  printf("conv_forward: %dx%dx%dx%d -> %dx%dx%dx%d, %d mismatches\n", N, C, H, W, n, c, p, q, bad);

  cudaFree(x); cudaFree(w); cudaFree(y);
  free(hx); free(hw); free(hy);
  jhdnnDestroyTensorDescriptor(xd); jhdnnDestroyTensorDescriptor(yd);
  jhdnnDestroyFilterDescriptor(wd); jhdnnDestroyConvolutionDescriptor(cd);
  jhdnnDestroy(h);
  return bad == 0 ? 0 : 1;
}
