/*
 * jhDNN public C API.
 *
 * Mirrors cuDNN 9's legacy API name for name: every `cudnnX` used here exists as `jhdnnX`, with
 * the same arguments, the same enumerator names (CUDNN_ -> JHDNN_) and the same numeric values,
 * so a framework that calls cuDNN can call jhDNN by renaming.
 *
 * Every call returns a jhdnnStatus_t. When a call fails, jhdnnGetLastErrorString() returns a
 * message (kept per thread) that names the constraint that failed, e.g.
 *   "filter C*groups (96) != input C (64)".
 *
 * Scaling parameters (alpha, beta) are host pointers: `float` for FLOAT/HALF/BFLOAT16 data, `double`
 * for DOUBLE data, exactly as in cuDNN. y = alpha * op(x, w) + beta * y; when *beta == 0, y is never
 * read (it may hold NaN).
 */
#ifndef JHDNN_H_
#define JHDNN_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define JHDNN_MAJOR 0
#define JHDNN_MINOR 1
#define JHDNN_PATCHLEVEL 0
#define JHDNN_VERSION (JHDNN_MAJOR * 10000 + JHDNN_MINOR * 100 + JHDNN_PATCHLEVEL)

/* Most dimensions a tensor descriptor holds (as CUDNN_DIM_MAX). */
#define JHDNN_DIM_MAX 8

#if defined(__cplusplus)
extern "C" {
#endif

/* ---------------------------------------------------------------- status */

typedef enum {
    JHDNN_STATUS_SUCCESS = 0,

    JHDNN_STATUS_NOT_INITIALIZED = 1001,
    JHDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH = 1002,
    JHDNN_STATUS_SERIALIZATION_VERSION_MISMATCH = 1003,
    JHDNN_STATUS_DEPRECATED = 1004,
    JHDNN_STATUS_LICENSE_ERROR = 1005,
    JHDNN_STATUS_RUNTIME_IN_PROGRESS = 1006,
    JHDNN_STATUS_RUNTIME_FP_OVERFLOW = 1007,
    JHDNN_STATUS_SUBLIBRARY_LOADING_FAILED = 1008,

    JHDNN_STATUS_BAD_PARAM = 2000,
    JHDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
    JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
    JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
    JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND = 2005,
    JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT = 2006,
    JHDNN_STATUS_BAD_PARAM_STREAM_MISMATCH = 2007,
    JHDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH = 2008,
    JHDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES = 2009,
    JHDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
    JHDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH = 2011,
    JHDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE = 2012,

    JHDNN_STATUS_NOT_SUPPORTED = 3000,
    JHDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN = 3001,
    JHDNN_STATUS_NOT_SUPPORTED_SHAPE = 3002,
    JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE = 3003,
    JHDNN_STATUS_NOT_SUPPORTED_LAYOUT = 3004,
    JHDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER = 3005,
    JHDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART = 3006,
    JHDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH = 3007,
    JHDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING = 3008,
    JHDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE = 3009,
    JHDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT = 3010,
    JHDNN_STATUS_NOT_SUPPORTED_PADDING = 3011,
    JHDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM = 3012,
    JHDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API = 3013,
    JHDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE = 3014,

    JHDNN_STATUS_INTERNAL_ERROR = 4000,
    JHDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED = 4001,
    JHDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE = 4002,
    JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4003,
    JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED = 4004,
    JHDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM = 4005,
    JHDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED = 4006,

    JHDNN_STATUS_EXECUTION_FAILED = 5000,
    JHDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER = 5001,
    JHDNN_STATUS_EXECUTION_FAILED_CUBLAS = 5002,
    JHDNN_STATUS_EXECUTION_FAILED_CUDART = 5003,
    JHDNN_STATUS_EXECUTION_FAILED_CURAND = 5004,

    /* cuDNN 9's deprecated aliases, kept so renamed code still compiles. */
    JHDNN_STATUS_ALLOC_FAILED = JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
    JHDNN_STATUS_INVALID_VALUE = 2001,
    JHDNN_STATUS_ARCH_MISMATCH = JHDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
    JHDNN_STATUS_MAPPING_ERROR = JHDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED,
    JHDNN_STATUS_RUNTIME_PREREQUISITE_MISSING = JHDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
    JHDNN_STATUS_VERSION_MISMATCH = JHDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH,
} jhdnnStatus_t;

#define JHDNN_STATUS_CATEGORY(full_error_code) ((full_error_code) / 1000 * 1000)
#define JHDNN_STATUS_SPECIFIC_ERROR(full_error_code) ((full_error_code) % 1000)

/* The status's name, e.g. "JHDNN_STATUS_BAD_PARAM_NULL_POINTER". Never NULL. */
const char *jhdnnGetErrorString(jhdnnStatus_t status);

/* Copies the calling thread's last error message (empty after a success) into message,
 * truncated to max_size - 1 characters and NUL-terminated. */
void jhdnnGetLastErrorString(char *message, size_t max_size);

/* JHDNN_VERSION of the library actually loaded. */
size_t jhdnnGetVersion(void);

/* ---------------------------------------------------------------- enums */

/* cuDNN 9's data types, value for value. Descriptors accept every one; convolution computes with
 * FLOAT, DOUBLE, HALF and BFLOAT16 and answers NOT_SUPPORTED_DATA_TYPE for the rest. */
typedef enum {
    JHDNN_DATA_FLOAT = 0,
    JHDNN_DATA_DOUBLE = 1,
    JHDNN_DATA_HALF = 2,
    JHDNN_DATA_INT8 = 3,
    JHDNN_DATA_INT32 = 4,
    JHDNN_DATA_INT8x4 = 5, /* deprecated in cuDNN 9 */
    JHDNN_DATA_UINT8 = 6,
    JHDNN_DATA_UINT8x4 = 7,  /* deprecated in cuDNN 9 */
    JHDNN_DATA_INT8x32 = 8,  /* deprecated in cuDNN 9 */
    JHDNN_DATA_BFLOAT16 = 9,
    JHDNN_DATA_INT64 = 10,
    JHDNN_DATA_BOOLEAN = 11,
    JHDNN_DATA_FP8_E4M3 = 12,
    JHDNN_DATA_FP8_E5M2 = 13,
    JHDNN_DATA_FAST_FLOAT_FOR_FP8 = 14,
    JHDNN_DATA_FP8_E8M0 = 15,
    JHDNN_DATA_FP4_E2M1 = 16,
    JHDNN_DATA_INT4 = 17,
    JHDNN_DATA_UINT4 = 18,
    JHDNN_DATA_UINT32 = 19,
    JHDNN_DATA_COMPLEX_FP32 = 20,
    JHDNN_DATA_COMPLEX_FP64 = 21,
} jhdnnDataType_t;

typedef enum {
    JHDNN_DEFAULT_MATH = 0,
    JHDNN_TENSOR_OP_MATH = 1,
    JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
    JHDNN_FMA_MATH = 3,
} jhdnnMathType_t;

typedef enum {
    JHDNN_TENSOR_NCHW = 0,        /* row major (wStride = 1, hStride = w) */
    JHDNN_TENSOR_NHWC = 1,        /* feature maps interleaved (cStride = 1) */
    JHDNN_TENSOR_NCHW_VECT_C = 2, /* accepted by no jhDNN call yet: NOT_SUPPORTED_LAYOUT */
} jhdnnTensorFormat_t;

typedef enum { JHDNN_CONVOLUTION = 0, JHDNN_CROSS_CORRELATION = 1 } jhdnnConvolutionMode_t;

typedef enum {
    JHDNN_NON_DETERMINISTIC = 0,
    JHDNN_DETERMINISTIC = 1,
} jhdnnDeterminism_t;

typedef enum {
    JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0,
    JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1,
    JHDNN_CONVOLUTION_FWD_ALGO_GEMM = 2,
    JHDNN_CONVOLUTION_FWD_ALGO_DIRECT = 3,
    JHDNN_CONVOLUTION_FWD_ALGO_FFT = 4,
    JHDNN_CONVOLUTION_FWD_ALGO_FFT_TILING = 5,
    JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD = 6,
    JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED = 7,
    JHDNN_CONVOLUTION_FWD_ALGO_COUNT = 8,
} jhdnnConvolutionFwdAlgo_t;

/* ---------------------------------------------------------------- handle */

typedef struct jhdnnContext *jhdnnHandle_t;

/* Binds the handle to the current CUDA device. NOT_INITIALIZED when there is no usable device.
   Each handle owns a cuBLAS handle (for the gemm_cublas solver), released by jhdnnDestroy; like a
   cuDNN handle, a jhdnn handle is for one thread at a time. It loads the library's kernels; the
   process's first handle on a device also creates the memory pool of the sparse resident path's
   handed schedule, primed with one 2 MiB allocation (kept for the process: a new pool's first
   allocation costs ~10 ms of host time, paid here rather than in a later call), without breaking a
   stream capture in progress. */
jhdnnStatus_t jhdnnCreate(jhdnnHandle_t *handle);
jhdnnStatus_t jhdnnDestroy(jhdnnHandle_t handle);
jhdnnStatus_t jhdnnSetStream(jhdnnHandle_t handle, cudaStream_t streamId);
jhdnnStatus_t jhdnnGetStream(jhdnnHandle_t handle, cudaStream_t *streamId);

/* ---------------------------------------------------------------- tensors */

typedef struct jhdnnTensorStruct *jhdnnTensorDescriptor_t;

jhdnnStatus_t jhdnnCreateTensorDescriptor(jhdnnTensorDescriptor_t *tensorDesc);
jhdnnStatus_t jhdnnDestroyTensorDescriptor(jhdnnTensorDescriptor_t tensorDesc);

jhdnnStatus_t jhdnnSetTensor4dDescriptor(jhdnnTensorDescriptor_t tensorDesc, jhdnnTensorFormat_t format,
                                         jhdnnDataType_t dataType, int n, int c, int h, int w);
jhdnnStatus_t jhdnnSetTensor4dDescriptorEx(jhdnnTensorDescriptor_t tensorDesc, jhdnnDataType_t dataType,
                                           int n, int c, int h, int w, int nStride, int cStride,
                                           int hStride, int wStride);
jhdnnStatus_t jhdnnGetTensor4dDescriptor(const jhdnnTensorDescriptor_t tensorDesc,
                                         jhdnnDataType_t *dataType, int *n, int *c, int *h, int *w,
                                         int *nStride, int *cStride, int *hStride, int *wStride);
/* dimA = {n, c, spatial...}, strides in elements; 3 <= nbDims <= JHDNN_DIM_MAX. */
jhdnnStatus_t jhdnnSetTensorNdDescriptor(jhdnnTensorDescriptor_t tensorDesc, jhdnnDataType_t dataType,
                                         int nbDims, const int dimA[], const int strideA[]);
jhdnnStatus_t jhdnnSetTensorNdDescriptorEx(jhdnnTensorDescriptor_t tensorDesc, jhdnnTensorFormat_t format,
                                           jhdnnDataType_t dataType, int nbDims, const int dimA[]);
jhdnnStatus_t jhdnnGetTensorNdDescriptor(const jhdnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         jhdnnDataType_t *dataType, int *nbDims, int dimA[],
                                         int strideA[]);
/* Bytes spanned by the tensor: (1 + sum (dim_i - 1) * stride_i) * element size. */
jhdnnStatus_t jhdnnGetTensorSizeInBytes(const jhdnnTensorDescriptor_t tensorDesc, size_t *size);

/* ---------------------------------------------------------------- filters */

typedef struct jhdnnFilterStruct *jhdnnFilterDescriptor_t;

jhdnnStatus_t jhdnnCreateFilterDescriptor(jhdnnFilterDescriptor_t *filterDesc);
jhdnnStatus_t jhdnnDestroyFilterDescriptor(jhdnnFilterDescriptor_t filterDesc);
/* format NCHW: KCRS in memory; NHWC: KRSC. c is the channels of one group. */
jhdnnStatus_t jhdnnSetFilter4dDescriptor(jhdnnFilterDescriptor_t filterDesc, jhdnnDataType_t dataType,
                                         jhdnnTensorFormat_t format, int k, int c, int h, int w);
jhdnnStatus_t jhdnnGetFilter4dDescriptor(const jhdnnFilterDescriptor_t filterDesc,
                                         jhdnnDataType_t *dataType, jhdnnTensorFormat_t *format, int *k,
                                         int *c, int *h, int *w);
jhdnnStatus_t jhdnnSetFilterNdDescriptor(jhdnnFilterDescriptor_t filterDesc, jhdnnDataType_t dataType,
                                         jhdnnTensorFormat_t format, int nbDims, const int filterDimA[]);
jhdnnStatus_t jhdnnGetFilterNdDescriptor(const jhdnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                         jhdnnDataType_t *dataType, jhdnnTensorFormat_t *format,
                                         int *nbDims, int filterDimA[]);
jhdnnStatus_t jhdnnGetFilterSizeInBytes(const jhdnnFilterDescriptor_t filterDesc, size_t *size);

/* ---------------------------------------------------------------- convolution */

typedef struct jhdnnConvolutionStruct *jhdnnConvolutionDescriptor_t;

typedef struct jhdnnConvolutionFwdAlgoPerfStruct {
    jhdnnConvolutionFwdAlgo_t algo;
    jhdnnStatus_t status;
    float time; /* milliseconds; -1 when not timed */
    size_t memory;
    jhdnnDeterminism_t determinism;
    jhdnnMathType_t mathType;
    int reserved[3];
} jhdnnConvolutionFwdAlgoPerf_t;

jhdnnStatus_t jhdnnCreateConvolutionDescriptor(jhdnnConvolutionDescriptor_t *convDesc);
jhdnnStatus_t jhdnnDestroyConvolutionDescriptor(jhdnnConvolutionDescriptor_t convDesc);
jhdnnStatus_t jhdnnSetConvolutionMathType(jhdnnConvolutionDescriptor_t convDesc, jhdnnMathType_t mathType);
jhdnnStatus_t jhdnnGetConvolutionMathType(jhdnnConvolutionDescriptor_t convDesc, jhdnnMathType_t *mathType);
jhdnnStatus_t jhdnnSetConvolutionGroupCount(jhdnnConvolutionDescriptor_t convDesc, int groupCount);
jhdnnStatus_t jhdnnGetConvolutionGroupCount(jhdnnConvolutionDescriptor_t convDesc, int *groupCount);
jhdnnStatus_t jhdnnSetConvolution2dDescriptor(jhdnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w,
                                              int u, int v, int dilation_h, int dilation_w,
                                              jhdnnConvolutionMode_t mode, jhdnnDataType_t computeType);
jhdnnStatus_t jhdnnGetConvolution2dDescriptor(const jhdnnConvolutionDescriptor_t convDesc, int *pad_h,
                                              int *pad_w, int *u, int *v, int *dilation_h,
                                              int *dilation_w, jhdnnConvolutionMode_t *mode,
                                              jhdnnDataType_t *computeType);
/* arrayLength = number of spatial dimensions (2 or 3). */
jhdnnStatus_t jhdnnSetConvolutionNdDescriptor(jhdnnConvolutionDescriptor_t convDesc, int arrayLength,
                                              const int padA[], const int filterStrideA[],
                                              const int dilationA[], jhdnnConvolutionMode_t mode,
                                              jhdnnDataType_t computeType);
jhdnnStatus_t jhdnnGetConvolutionNdDescriptor(const jhdnnConvolutionDescriptor_t convDesc,
                                              int arrayLengthRequested, int *arrayLength, int padA[],
                                              int strideA[], int dilationA[],
                                              jhdnnConvolutionMode_t *mode, jhdnnDataType_t *computeType);
jhdnnStatus_t jhdnnGetConvolution2dForwardOutputDim(const jhdnnConvolutionDescriptor_t convDesc,
                                                    const jhdnnTensorDescriptor_t inputTensorDesc,
                                                    const jhdnnFilterDescriptor_t filterDesc, int *n,
                                                    int *c, int *h, int *w);
jhdnnStatus_t jhdnnGetConvolutionNdForwardOutputDim(const jhdnnConvolutionDescriptor_t convDesc,
                                                    const jhdnnTensorDescriptor_t inputTensorDesc,
                                                    const jhdnnFilterDescriptor_t filterDesc, int nbDims,
                                                    int tensorOuputDimA[]);

/* JHDNN_CONVOLUTION_FWD_ALGO_COUNT. */
jhdnnStatus_t jhdnnGetConvolutionForwardAlgorithmMaxCount(jhdnnHandle_t handle, int *count);

/* Every algorithm, ranked by heuristic (fastest expected first); entries whose status is not
 * SUCCESS cannot run this problem and come last. Nothing is run. */
jhdnnStatus_t jhdnnGetConvolutionForwardAlgorithm_v7(
    jhdnnHandle_t handle, const jhdnnTensorDescriptor_t srcDesc, const jhdnnFilterDescriptor_t filterDesc,
    const jhdnnConvolutionDescriptor_t convDesc, const jhdnnTensorDescriptor_t destDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, jhdnnConvolutionFwdAlgoPerf_t *perfResults);

/* Times every applicable algorithm on buffers it allocates itself; sorted by time. */
jhdnnStatus_t jhdnnFindConvolutionForwardAlgorithm(
    jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc, const jhdnnFilterDescriptor_t wDesc,
    const jhdnnConvolutionDescriptor_t convDesc, const jhdnnTensorDescriptor_t yDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, jhdnnConvolutionFwdAlgoPerf_t *perfResults);

/* As above on the caller's buffers; y is overwritten. Algorithms needing more than
 * workSpaceSizeInBytes answer BAD_PARAM_SIZE_INSUFFICIENT in their entry. */
jhdnnStatus_t jhdnnFindConvolutionForwardAlgorithmEx(
    jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc, const void *x,
    const jhdnnFilterDescriptor_t wDesc, const void *w, const jhdnnConvolutionDescriptor_t convDesc,
    const jhdnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount, int *returnedAlgoCount,
    jhdnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes);

jhdnnStatus_t jhdnnGetConvolutionForwardWorkspaceSize(jhdnnHandle_t handle,
                                                      const jhdnnTensorDescriptor_t xDesc,
                                                      const jhdnnFilterDescriptor_t wDesc,
                                                      const jhdnnConvolutionDescriptor_t convDesc,
                                                      const jhdnnTensorDescriptor_t yDesc,
                                                      jhdnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes);

/* y = alpha * conv(x, w) + beta * y, on the handle's stream. */
jhdnnStatus_t jhdnnConvolutionForward(jhdnnHandle_t handle, const void *alpha,
                                      const jhdnnTensorDescriptor_t xDesc, const void *x,
                                      const jhdnnFilterDescriptor_t wDesc, const void *w,
                                      const jhdnnConvolutionDescriptor_t convDesc,
                                      jhdnnConvolutionFwdAlgo_t algo, void *workSpace,
                                      size_t workSpaceSizeInBytes, const void *beta,
                                      const jhdnnTensorDescriptor_t yDesc, void *y);

/* ---------------------------------------------------------------- GEMM (jhDNN extension) */

/* Storage order of a dense matrix, for GEMM and SpMM. */
typedef enum {
    JHDNN_ORDER_ROW = 0, /* element (r, c) at r * ld + c */
    JHDNN_ORDER_COL = 1, /* element (r, c) at c * ld + r */
} jhdnnOrder_t;

/* Not part of cuDNN (cuBLAS's job there); shaped like cublasSgemmStridedBatched with an explicit
 * storage order. C = alpha * op(A) op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n.
 * ld* are the distances between consecutive columns (ORDER_COL) or rows (ORDER_ROW) of the stored
 * matrices; stride* between consecutive matrices of a batch. alpha, beta: host floats (every data type).
 * When *beta == 0, C is never read (it may hold NaN). k == 0 gives C = beta * C. */
typedef enum { JHDNN_GEMM_OP_N = 0, JHDNN_GEMM_OP_T = 1 } jhdnnGemmOp_t;

/* dataType FLOAT: fp32 on the CUDA cores (FMA, never tensor cores: jhdnnGemmEx with a tensor-op
 * math type asks for TF32). HALF / BFLOAT16: tensor cores, fp32 accumulation, C in dataType
 * (jhdnnGemmEx's DEFAULT_MATH). alpha and beta are host floats for every data type. Other types
 * answer NOT_SUPPORTED_DATA_TYPE. */
jhdnnStatus_t jhdnnGemm(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnOrder_t order,
                        jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n, int64_t k,
                        const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                        const void *beta, void *C, int64_t ldc);

/* batchCount GEMMs; matrix i of X starts at X + i * strideX elements. strideA / strideB may be 0
 * (shared operand); C's batches must not overlap. batchCount == 0 does nothing. */
jhdnnStatus_t jhdnnGemmStridedBatched(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnOrder_t order,
                                      jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n,
                                      int64_t k, const void *alpha, const void *A, int64_t lda,
                                      int64_t strideA, const void *B, int64_t ldb, int64_t strideB,
                                      const void *beta, void *C, int64_t ldc, int64_t strideC,
                                      int64_t batchCount);

/* The GEMM with explicit types and math type (cublasGemmEx's role). Accumulation is always fp32;
 * alpha and beta are host floats.
 *   abType   the type of A and B: FLOAT, HALF or BFLOAT16.
 *   cType    the type of C: abType, or FLOAT with HALF / BFLOAT16 inputs (fp32 output; sm_90 and
 *            the layouts of the 128x256 Hopper kernel only, see docs/api.md: else NOT_SUPPORTED).
 *   mathType FMA_MATH: never tensor cores (FLOAT runs the fp32 CUDA-core GEMM; HALF / BFLOAT16
 *            answer NOT_SUPPORTED, jhDNN has no CUDA-core 16-bit GEMM).
 *            DEFAULT_MATH, TENSOR_OP_MATH, TENSOR_OP_MATH_ALLOW_CONVERSION: tensor cores; FLOAT
 *            data runs on TF32 tensor cores (10-bit mantissa products, fp32 accumulation) unless
 *            NVIDIA_TF32_OVERRIDE=0 is set or the GPU is older than sm_80, in which case it runs
 *            the fp32 CUDA-core GEMM (as cuDNN's math-type rules).
 * The environment variable JHDNN_TC_GEMM = auto | hopper | wgmma | mma caps the tensor-core
 * kernel choice (a bypass for a misbehaving kernel; docs/api.md). */
jhdnnStatus_t jhdnnGemmEx(jhdnnHandle_t handle, jhdnnOrder_t order, jhdnnGemmOp_t transA, jhdnnGemmOp_t transB,
                          int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                          const void *B, int64_t ldb, jhdnnDataType_t abType, const void *beta, void *C,
                          int64_t ldc, jhdnnDataType_t cType, jhdnnMathType_t mathType);

jhdnnStatus_t jhdnnGemmStridedBatchedEx(jhdnnHandle_t handle, jhdnnOrder_t order, jhdnnGemmOp_t transA,
                                        jhdnnGemmOp_t transB, int64_t m, int64_t n, int64_t k, const void *alpha,
                                        const void *A, int64_t lda, int64_t strideA, const void *B, int64_t ldb,
                                        int64_t strideB, jhdnnDataType_t abType, const void *beta, void *C,
                                        int64_t ldc, int64_t strideC, jhdnnDataType_t cType,
                                        jhdnnMathType_t mathType, int64_t batchCount);

/* ================================================================ sparse (issue 6)
 * Sparse matrices, dense-to-CSR, CSR x dense SpMM and the Sparse DNN Graph Challenge layer.
 * cuSPARSE-flavoured, jhDNN-styled: a descriptor holds device pointers the caller owns; every call
 * runs on the handle's stream; indices are 0-based int32; values are FLOAT. docs/sparse.md has the
 * rules and an example. */

typedef enum {
    JHDNN_SPARSE_FORMAT_CSR = 0, /* rowPtr[rows + 1], colInd[nnz], values[nnz] */
    JHDNN_SPARSE_FORMAT_ELL = 1, /* row-major [rows][width]; padding entries have colInd = -1 */
} jhdnnSparseFormat_t;

typedef enum {
    JHDNN_SPMM_ALG_DEFAULT = 0,    /* row-major: WARP_ROW_WIDE when n >= 512, else NNZ_PAIRS; column-major:
                                    * TRANSPOSE_B when jhdnnSpMMWithWorkspace is given its workspace,
                                    * else NNZ_PAIRS. So DEFAULT is NOT bitwise deterministic except for
                                    * row-major n >= 512: ask for WARP_ROW (or WARP_ROW_WIDE) when
                                    * run-to-run identical bits matter */
    JHDNN_SPMM_ALG_THREAD_ROW = 1, /* one thread per row of A: the simplest, slow on long rows */
    JHDNN_SPMM_ALG_WARP_ROW = 2,   /* one warp per row of A, lanes over columns of B (float4 loads when
                                    * n, ldb, ldc are multiples of 4 and B, C 16-byte aligned) */
    JHDNN_SPMM_ALG_NNZ_SPLIT = 3,  /* equal nonzero chunks per warp (load balance for skewed rows); NOT
                                    * deterministic in the last bits: rows cut by a chunk boundary are
                                    * summed with float atomics, in an order that varies run to run */
    JHDNN_SPMM_ALG_WARP_ROW_WIDE = 4, /* 4 rows per warp in the row order, 2 float4 per lane; when the 4
                                       * rows have the same column list each B load feeds all 4 (wide B);
                                       * column-major: as WARP_ROW. Row-major B: at most 65535 bands of
                                       * 512 columns (n <= 33,553,920; WARP_ROW too), else
                                       * NOT_SUPPORTED_SHAPE (DEFAULT then runs NNZ_PAIRS) */
    JHDNN_SPMM_ALG_NNZ_PAIRS = 5,  /* NNZ_SPLIT with lane groups: row-major B: half-warps over 64-column
                                    * bands (float4), two nonzeros per step (n, ldb multiples of 4, B
                                    * 16-byte aligned, else runs NNZ_SPLIT); column-major B: 8 lanes x
                                    * 8-column bands, 4 nonzeros per step. Not deterministic (as NNZ_SPLIT) */
    JHDNN_SPMM_ALG_TRANSPOSE_B = 6, /* column-major: B transposed into the workspace, then NNZ_PAIRS storing
                                     * C column-major; only through jhdnnSpMMWithWorkspace (jhdnnSpMM:
                                     * BAD_PARAM_SIZE_INSUFFICIENT). Row-major: NNZ_PAIRS, no workspace. Not deterministic */
    JHDNN_SPMM_ALG_COUNT = 7,
} jhdnnSpMMAlg_t;

typedef struct jhdnnSparseMatrixStruct *jhdnnSparseMatrixDescriptor_t;

jhdnnStatus_t jhdnnCreateSparseMatrixDescriptor(jhdnnSparseMatrixDescriptor_t *spDesc);
jhdnnStatus_t jhdnnDestroySparseMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc);
/* CSR, rows x cols with nnz stored entries. rowPtr has rows + 1 entries (rowPtr[0] = 0,
 * rowPtr[rows] = nnz); colInd and values may be NULL only when nnz == 0. The contents are not
 * read here (they live on the device); kernels assume them well formed (as cuSPARSE does: checking
 * them would cost a pass over the matrix per call). nnz > rows * cols is BAD_PARAM, nnz > INT_MAX - 64
 * NOT_SUPPORTED_SHAPE (the kernels' int32 positions). */
jhdnnStatus_t jhdnnSetCsrMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc, int64_t rows, int64_t cols,
                                          int64_t nnz, int *rowPtr, int *colInd, void *values,
                                          jhdnnDataType_t valueType);
/* ELL, rows x cols with width entries per row, row-major: entry k of row r at r * width + k;
 * padding has colInd = -1 (its value is ignored; any negative index counts as padding). Other entries
 * must be in [0, cols): the layer calls do not read them to check (a pass over the weights per call),
 * except the resident call, which refuses a layer holding an index >= cols with BAD_PARAM when it
 * packs it. width > INT_MAX - 64 is NOT_SUPPORTED_SHAPE. */
jhdnnStatus_t jhdnnSetEllMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc, int64_t rows, int64_t cols,
                                          int64_t width, int *colInd, void *values, jhdnnDataType_t valueType);
/* An order in which calls may process the rows (device, `rows` ints, a permutation of 0..rows-1;
 * NULL: natural order). A performance hint with no effect on results: jhdnnSparseDnnLayerForward
 * (and ...Compact) computes output neurons in this order, and jhdnnSpMM WARP_ROW (and DEFAULT)
 * visits rows in it, so rows that share columns should be adjacent (their feature / B loads then
 * hit in L1). rowOrder must be device memory of the current device (a plain host pointer:
 * BAD_PARAM) that the caller has finished writing: it is checked here by one synchronous cudaMemcpy
 * to the host (BAD_PARAM if not a permutation), and later changes to it are NOT checked again (an
 * order changed into a non-permutation leaves outputs unwritten or written twice). Setting the
 * matrix again clears it. */
jhdnnStatus_t jhdnnSetSparseMatrixRowOrder(jhdnnSparseMatrixDescriptor_t spDesc, const int *rowOrder);
/* The math a layer may run with in the resident call (jhdnnSparseDnnLayersForwardResident*; no other call reads
 * it). A descriptor's math type is JHDNN_DEFAULT_MATH after Create and stays what was set across Set* calls.
 *   JHDNN_DEFAULT_MATH, JHDNN_FMA_MATH: the fp32 fma chain, bit for bit as every layer call.
 *   JHDNN_TENSOR_OP_MATH: bf16 tensor cores (mma.sync m16n8k16), each fp32 feature split into three bf16 pieces
 *     (hi + mid + lo, exact but for the last bit or so) times the layer's weights, which must be bf16 values (the
 *     challenge's 1/16 is); the products are exact and the tensor cores sum them in fp32 in their own order. The
 *     features are then NOT the fma chain's bit for bit: their difference grows through the layers (on the
 *     challenge's data, within 2.6e-6 of outputs up to 2.6 after five layers; docs/sparse.md), and an image whose
 *     chain has an output within that much of the ReLU's edge may live one layer longer or die one earlier.
 *   JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: as TENSOR_OP_MATH with each feature rounded to one bf16 value (one MMA
 *     where three were: faster, and outputs off by up to ~1e-2 of 3; before the call's last layer the tensor cores
 *     also add the bias, in their order); a layer before the call's last counts an image active by its rounded
 *     features (an output below ~2^-134, bf16's zero, counts as zero, as the next layer reads it).
 * A resident call whose layers all carry a tensor-op math type runs them on tensor cores (three pieces unless every
 * layer allows conversion), in 16-image tiles (8 in the streamed calls below) whatever sliceImages says, with this
 * contract instead of the fma chain's; features must be finite (a non-finite one may give NaN where the chain gives the clamp). It returns
 *   NOT_SUPPORTED: some but not all layers carry a tensor-op math type (split the call there); IMAGE_MAJOR features;
 *     a trace; a layer whose weights do not fit 16 x 16 bf16 blocks (a weight that is not a bf16 value, a row
 *     reading an input twice, 16 rows in reuse order reading more than two blocks of 16 inputs after the inputs are
 *     renamed by their readers, as the challenge's layers do); a first call with a descriptor inside a stream capture;
 *     past n = 1024, a block of 16 inputs read by groups of more than two of the cluster's CTAs (below);
 *   NOT_SUPPORTED_SHAPE: n not a multiple of 64 (up to 1024 and past 16384) nor of 1024 (up to 16384), three pieces
 *     past n = 1024, more than 8 layers with three pieces, or more than shared memory holds (at n = 1024: 6 layers
 *     with three pieces), or past n = 1024 no cluster of its CTAs fits on the device where the call needs one;
 *   INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED: the planes below could not be allocated;
 * and nothing has run then. Past n = 1024 (sm_90) the call runs as thread-block clusters of n / 1024 CTAs, each
 * computing 1024 rows of every layer and holding the inputs they read; a layer's outputs cross to the CTAs that read
 * them through distributed shared memory (clusters past 8 CTAs are non-portable: n = 16384 runs only where the
 * device fits one). The first call that uses a descriptor on a device builds its tables (a copy of its arrays to the
 * host and a synchronize of the handle's stream; n / 16 KiB + 8.5 n bytes of device memory, past n = 1024 at most
 * 5 n + n^2 / 4096 bytes more; kept with the descriptor until it is set again or destroyed). The tiles keep every
 * image's features on chip through the call's layers without pruning between them: a call for the first few layers,
 * where most images live; or, streamed, for the late ones, where few do. A call of more than 8 layers (one piece,
 * n <= 4096), or one whose tables the cluster's shared memory cannot hold, runs the streamed kernel: one CTA keeps
 * an 8-image tile's n features through all the call's layers and reads each layer's weights from the L2 as it goes
 * (no cluster); a tile whose images all died stops. Per image it computes what the 8-layer calls compute, bit for
 * bit: a call of layers 1-11 gives the outputs, survivors and counts of calls of 1-5 and 6-11. Past n = 4096 (one
 * piece) such calls, and every call past n = 16384, run the planes kernels instead: the features in two bf16 planes in
 * device memory (2 x n x maxActive x 2 bytes and 12.5 bytes a column of lists, taken stream-ordered from the device's
 * current memory pool with cudaMallocAsync and freed the same way at the call's end: the application's release
 * threshold on that pool says whether the memory stays mapped for the next call), one launch a layer, the columns
 * that died moved out after the call's layers 1, 2, 4, 8, .. where that pays (the columns that died times the layers
 * before the next such point outnumber the survivors); the same bits per image as the 8-layer calls, and the
 * survivors listed in ascending list position.
 * BAD_PARAM for another value or a NULL descriptor. */
jhdnnStatus_t jhdnnSetSparseMatrixMathType(jhdnnSparseMatrixDescriptor_t spDesc, jhdnnMathType_t mathType);
jhdnnStatus_t jhdnnGetSparseMatrixMathType(const jhdnnSparseMatrixDescriptor_t spDesc, jhdnnMathType_t *mathType);
/* nnz is rows * width for ELL. Any output pointer may be NULL. */
jhdnnStatus_t jhdnnGetSparseMatrixDescriptor(const jhdnnSparseMatrixDescriptor_t spDesc,
                                             jhdnnSparseFormat_t *format, int64_t *rows, int64_t *cols,
                                             int64_t *nnz);

/* Dense (FLOAT, rows x cols, row-major with leading dimension lda) to CSR, in two steps:
 *   1. jhdnnDenseToCsrAnalysis writes csrRowPtr (rows + 1 entries, device) and returns the number
 *      of nonzeros in *nnz (host; the call waits for it);
 *   2. the caller allocates colInd/values of nnz entries, sets a CSR descriptor with them, and
 *      jhdnnDenseToCsrConvert fills them (column indices ascending within each row).
 * Convert writes only the descriptor's nnz entries: if that nnz is smaller than the analysis gave,
 * or A changed between the two calls, entries at or past nnz are dropped (the result is then not
 * A's CSR, but nothing is written past colInd / values); A must be the analysed matrix.
 * The workspace (device, jhdnnGetDenseToCsrWorkspaceSize bytes, 256-byte aligned, else
 * BAD_PARAM_MISALIGNED_POINTER) is only used by the analysis. rows * cols > INT_MAX (nnz in int32) is
 * NOT_SUPPORTED_SHAPE in all three calls; lda < cols is BAD_PARAM, an A whose extent
 * ((rows - 1) * lda + cols floats) overflows 64-bit byte offsets BAD_PARAM_OUT_OF_BOUND. */
jhdnnStatus_t jhdnnGetDenseToCsrWorkspaceSize(jhdnnHandle_t handle, int64_t rows, int64_t cols, size_t *sizeInBytes);
jhdnnStatus_t jhdnnDenseToCsrAnalysis(jhdnnHandle_t handle, int64_t rows, int64_t cols, const void *A,
                                      int64_t lda, int *csrRowPtr, int64_t *nnz, void *workSpace,
                                      size_t workSpaceSizeInBytes);
jhdnnStatus_t jhdnnDenseToCsrConvert(jhdnnHandle_t handle, const void *A, int64_t lda,
                                     jhdnnSparseMatrixDescriptor_t csrDesc);

/* C = alpha * A * B + beta * C (alpha, beta: host floats). A: CSR descriptor (m x k); B: k x n, C: m x n, both dense FLOAT in
 * the given order with leading dimensions ldb, ldc. beta == 0 never reads C. Extents of B or C that
 * overflow 64-bit byte offsets: BAD_PARAM_OUT_OF_BOUND; C overlapping B: BAD_PARAM. NNZ_SPLIT,
 * NNZ_PAIRS, TRANSPOSE_B and DEFAULT (when it picks one of those) are not bitwise deterministic: see
 * jhdnnSpMMAlg_t. */
jhdnnStatus_t jhdnnSpMM(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo, const void *alpha,
                        const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order,
                        const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
/* Device workspace bytes that jhdnnSpMMWithWorkspace needs for this algorithm and shape: k *
 * roundup(n, 4) * 4 for TRANSPOSE_B (and DEFAULT) with a column-major B, else 0. A size past int64:
 * NOT_SUPPORTED_SHAPE. */
jhdnnStatus_t jhdnnGetSpMMWorkspaceSize(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo,
                                        const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order,
                                        size_t *sizeInBytes);
/* jhdnnSpMM with a workspace (device, 256-byte aligned, not overlapping B or C; NULL with size 0 when
 * none is needed). TRANSPOSE_B with a column-major B and less than the reported size:
 * BAD_PARAM_SIZE_INSUFFICIENT;
 * DEFAULT uses TRANSPOSE_B for a column-major B only when the workspace is large enough. */
jhdnnStatus_t jhdnnSpMMWithWorkspace(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo, const void *alpha,
                                     const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order,
                                     const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc,
                                     void *workSpace, size_t workSpaceSizeInBytes);

/* One Sparse DNN Graph Challenge layer, fused, on a compacted list of active images:
 *   y(j, r) = min(max(sum_i x(i, activeRows[r]) * W(i, j) + bias, 0), clampMax)   for r < *activeCount
 * Features are stored feature-major (the seed paper's transposed layout): x(i, img) at
 * x[i * ldx + img], y(j, r) at y[j * ldy + r], so a warp reads 32 images of one feature at once.
 * wtDesc is W transposed in ELL form: row j lists the input neurons of output neuron j (width any,
 * 32 in the challenge). activeCount is a DEVICE pointer (so no host sync between layers);
 * maxActive bounds the launch and the buffers: min(*activeCount, maxActive) images are processed
 * (activeRows, rowNonzero and the columns of y hold maxActive; nothing past them is read or written).
 * rowNonzero (device, maxActive ints) receives 1 for each processed r whose output row has a
 * nonzero, else 0 (also for the r not processed).
 * bias must be <= 0 (so a zero row stays zero and pruning is exact) and clampMax > 0. x spans
 * wtDesc cols * ldx floats and y (wtDesc rows - 1) * ldy + maxActive: an extent that overflows
 * 64-bit byte offsets is BAD_PARAM_OUT_OF_BOUND. Every output (y, rowNonzero) must be its own buffer:
 * one overlapping the other or an input (activeCount, activeRows, x) is BAD_PARAM. */
jhdnnStatus_t jhdnnSparseDnnLayerForward(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc,
                                         float bias, float clampMax, int maxActive, const int *activeCount,
                                         const int *activeRows, const void *x, int64_t ldx, void *y,
                                         int64_t ldy, int *rowNonzero);

/* Compaction between layers: keeps the r < maxActive with rowNonzero[r] != 0, in order:
 * rowsOut[t] = r (the position of the survivor in the layer's output) and idsOut[t] = idsIn[r]
 * (whatever the caller tracks, e.g. image numbers); *countOut (device) = number kept.
 * workSpace: jhdnnGetSparseDnnCompactWorkspaceSize(maxActive) bytes, device, 256-byte aligned (else
 * BAD_PARAM_MISALIGNED_POINTER). rowsOut, idsOut, countOut and workSpace must not overlap each other,
 * rowNonzero or idsIn (BAD_PARAM). */
jhdnnStatus_t jhdnnGetSparseDnnCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive, size_t *sizeInBytes);
jhdnnStatus_t jhdnnSparseDnnCompact(jhdnnHandle_t handle, int maxActive, const int *rowNonzero,
                                    const int *idsIn, int *rowsOut, int *idsOut, int *countOut,
                                    void *workSpace, size_t workSpaceSizeInBytes);

/* The challenge layer with the compaction fused in: ONE kernel per layer, whose launch shape does
 * not depend on the host (a persistent grid that sizes its work from *activeCount on the device),
 * so a whole network can be captured in a CUDA graph with no host round trip.
 *   y as in jhdnnSparseDnnLayerForward (for r < min(*activeCount, maxActive)); then every r whose
 *   output row has a nonzero is appended to the next list: rowsOut[t] = r, idsOut[t] = idsIn[r],
 *   t = the old *countOut + a slot from an atomic counter, so *countOut (device) must be 0 on entry
 *   and ends as the number kept. The ORDER of the kept entries is unspecified (it varies run to run;
 *   each image's values do not depend on it). If *countOut was not 0, *countOut ends as the old
 *   value + the number kept and only slots t in [0, maxActive) are written (the rest are dropped).
 * workSpace: jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(maxActive) bytes, device, 256-byte
 * aligned (else BAD_PARAM_MISALIGNED_POINTER), which the caller zeroes ONCE before the first call:
 * every call leaves it zeroed again, so one workspace serves a whole network. A workspace that was
 * not zeroed gives wrong survivors and a wrong *countOut (stale flags count as nonzero rows; a stale
 * tile counter compacts a tile early or never), but nothing is written past the buffers. The outputs
 * (y, rowsOut, idsOut, countOut, workSpace) must not overlap each other or an input (activeCount,
 * activeRows, idsIn, x): other blocks still read those while survivors are appended (BAD_PARAM). */
jhdnnStatus_t jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive,
                                                           size_t *sizeInBytes);
jhdnnStatus_t jhdnnSparseDnnLayerForwardCompact(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc,
                                                float bias, float clampMax, int maxActive, const int *activeCount,
                                                const int *activeRows, const int *idsIn, const void *x,
                                                int64_t ldx, void *y, int64_t ldy, int *rowsOut, int *idsOut,
                                                int *countOut, void *workSpace, size_t workSpaceSizeInBytes);

/* How a fused layer call stores its features (x and y alike). */
typedef enum {
    /* x(i, c) at x[i * ldx + c]: the layer calls' layout (jhdnnSparseDnnLayerForwardCompact) */
    JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR = 0,
    /* columns in blocks of 128, each block neuron-major with leading dimension 128:
     * x(i, c) at x[(c / 128) * n * 128 + i * 128 + c % 128], n = wtDesc cols for x and wtDesc rows for y.
     * ldx, ldy give the buffers' column capacities (multiples of 128): x spans ldx * n floats. A tile of
     * 128 images of consecutive neurons is then one contiguous piece, so neurons that are read together
     * (renumber them so, which is exact: see docs/sparse.md) are read in wide pieces. */
    JHDNN_SPARSE_DNN_FEATURES_TILED128 = 1,
    /* the resident call's other layout (jhdnnSparseDnnLayersForwardResidentEx): each image's n features
     * contiguous, x(i, c) at x[c * s + i] with s = n rounded up to a multiple of 4 (the floats between n and
     * s of an image are neither read nor written); ldx, ldy give the buffers' column capacities (images),
     * so x spans (ldx - 1) * s + n floats. x and y must be 16-byte aligned. A slice of images is then a few
     * contiguous pieces of 4n bytes, where neuron-major puts an image's features n pieces ldx apart. The
     * layer calls refuse it (NOT_SUPPORTED). */
    JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR = 2,
} jhdnnSparseDnnFeatureLayout_t;

/* jhdnnSparseDnnLayerForwardCompact with a feature layout. NEURON_MAJOR is that call. TILED128 runs
 * JHDNN_SPDNN_TILE's late4all kernel in every layer and needs: width 32 (else NOT_SUPPORTED_SHAPE),
 * 16-byte aligned colInd and values (else BAD_PARAM_MISALIGNED_POINTER; both as the resident call),
 * JHDNN_SPDNN_TILE unset, auto or late4all (else NOT_SUPPORTED; a JHDNN_SPDNN_TILE that names no tile
 * is BAD_PARAM, as in every layer call),
 * ldx and ldy multiples of 128, ldx * (wtDesc cols) <= 2^32 floats (the kernel's 32-bit column offsets:
 * NOT_SUPPORTED_SHAPE beyond). The list, counts, workspace and results are as the neuron-major call's,
 * bitwise (every fma chain is the same; only the addresses differ). */
jhdnnStatus_t jhdnnSparseDnnLayerForwardCompactEx(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc,
                                                  float bias, float clampMax, int maxActive, const int *activeCount,
                                                  const int *activeRows, const int *idsIn,
                                                  jhdnnSparseDnnFeatureLayout_t layout, const void *x, int64_t ldx,
                                                  void *y, int64_t ldy, int *rowsOut, int *idsOut, int *countOut,
                                                  void *workSpace, size_t workSpaceSizeInBytes);

/* jhdnnSparseDnnLayerForwardCompactEx with a zero-piece mask of x (xMask; NULL: the Ex call): a feature row's
 * columns in pieces of 4, one bit each: bit (c % 128) / 4 of xMask[i * ((ldx + 127) / 128) + c / 128], for
 * wtDesc cols rows i (by column, in either layout). A 0 bit says that x(i, 4 (c / 4) .. + 3) are four +0.0f (all
 * bits zero; -0.0f is not); 1 says nothing. Where a tile of 128 images is 128 consecutive columns from a multiple of
 * 128 (a first layer: build the mask from the sparse input), an input row whose 128 features there are all zero
 * (its word 0) is not read, and a quad of 4 such inputs (4 consecutive entries of a row list) is not multiplied
 * where that is exact (finite weights in the whole 16-row block that reads it, bias not -0.0f). A 0 bit over
 * features that are not zero is a caller error: the outputs are then computed with zeros or with the values. Results
 * are the Ex call's: y bitwise, the same counts and the same survivors (the lists' order is unspecified, as there).
 * xMask: 4-byte aligned device memory (else BAD_PARAM_MISALIGNED_POINTER), read, not overlapping an output
 * (BAD_PARAM). */
jhdnnStatus_t jhdnnSparseDnnLayerForwardCompactMasked(
    jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc, float bias, float clampMax, int maxActive,
    const int *activeCount, const int *activeRows, const int *idsIn, jhdnnSparseDnnFeatureLayout_t layout,
    const void *x, int64_t ldx, const unsigned *xMask, void *y, int64_t ldy, int *rowsOut, int *idsOut,
    int *countOut, void *workSpace, size_t workSpaceSizeInBytes);

/* Several challenge layers in ONE cooperative launch (the late layers of a Sparse DNN, where a few
 * hundred images are alive and a launch per layer costs more than its work). Layer k (0-based, wtDescs[k]:
 * host array of layerCount set ELL descriptors, all n x n with the same n) runs exactly as
 * jhdnnSparseDnnLayerForwardCompact with activeCount = counts + k, countOut = counts + k + 1, and the
 * buffer sets alternating: even k reads (rows0, ids0, x0) and writes (rows1, ids1, x1), odd k the
 * reverse; x0, x1 are feature-major with leading dimension ld (>= maxActive). The final list is set
 * layerCount & 1. counts: device, layerCount + 1 ints, counts[0] = the active images on entry,
 * counts[1..layerCount] zero on entry (each ends as the survivors of its layer; the order of a list is
 * unspecified, as for the single-layer call). A grid-wide barrier separates the layers; once a
 * count reaches 0 the remaining layers do nothing (their counts stay 0).
 * workSpace: jhdnnGetSparseDnnLayersForwardCompactWorkspaceSize(maxActive) bytes, device, 256-byte
 * aligned, zeroed by the caller ONCE and reusable after any call (its first
 * jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(maxActive) bytes are the single-layer workspace,
 * so one zeroed buffer serves both calls in any mix). The layers travel as kernel parameters (96 per
 * launch: more layers take more launches, with nothing else in between). Returns NOT_SUPPORTED if
 * the device cannot launch cooperative kernels; then nothing has run. */
jhdnnStatus_t jhdnnGetSparseDnnLayersForwardCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive,
                                                                 size_t *sizeInBytes);
jhdnnStatus_t jhdnnSparseDnnLayersForwardCompact(jhdnnHandle_t handle, int layerCount,
                                                 const jhdnnSparseMatrixDescriptor_t *wtDescs, float bias,
                                                 float clampMax, int maxActive, int *counts, int *rows0, int *ids0,
                                                 void *x0, int *rows1, int *ids1, void *x1, int64_t ld,
                                                 void *workSpace, size_t workSpaceSizeInBytes);

/* Shared-memory-resident late layers of a Sparse DNN (few images alive): ONE launch runs layers
 * 0 .. layerCount - 1 (1 <= layerCount <= JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS; wtDescs: host array of
 * set ELL descriptors of width 32, all n x n with the same n) for the images r < min(counts[0],
 * maxActive) of the list activeRows / idsIn. Each CTA owns a slice of sliceImages consecutive list
 * positions and keeps their features in shared memory for all the layers (no grid-wide step, no
 * feature traffic in between); an image whose output row is all zero leaves its slice. Every value
 * is computed exactly as jhdnnSparseDnnLayerForwardCompact computes it (the same fma chain in the
 * same order, bias, ReLU, clamp), so survivors and their features are bitwise those of that path;
 * except where the layers' descriptors carry a tensor-op math type (jhdnnSetSparseMatrixMathType
 * says what runs then and what it promises instead).
 *   Input: image r is column activeRows[r] of x (feature-major, n rows, leading dimension ldx).
 *   Output: counts[k + 1] = images alive after layer k (device; counts[1 .. layerCount] must be 0 on
 *   entry); for the survivors of the last layer, rowsOut[t] = r, idsOut[t] = idsIn[r] and y column r
 *   (ldy >= maxActive) = the image's last output, t < counts[layerCount] in an unspecified order (slots
 *   at or past maxActive are dropped if counts[layerCount] was not 0). Other columns of y are not
 *   written. rowsOut NULL asks for the compacted output instead: survivor t's last output in y column t
 *   (slot t as above, idsOut[t] = idsIn[r]; nothing at or past maxActive), so that the next layer reads
 *   the survivors as activeRows = 0, 1, 2, ... (a multi-layer call whose input is a long list leaves
 *   few survivors spread over its columns otherwise). The outputs (y, rowsOut, idsOut, counts, the
 *   trace) must not overlap each other or an input (activeRows, idsIn, x): BAD_PARAM.
 *   sliceImages: 1 .. the most that fit (8 up to n = 1452: 2 x (n + 1) x 8 floats of features + 136 KB
 *   of weight stages per CTA; 4 up to n = 2905, 2 up to 5811 with 227 KB per block; 4 also where the
 *   vals kernel runs, i.e. where its ring fits because the layers' runs of equal index lists and weight
 *   values make its chunks small, as the challenge's do: up to n = 5591 with their 3,328-byte chunks),
 *   or 0 for that most (or 4 where the default runs vals4w8, below); NOT_SUPPORTED_SHAPE beyond
 *   (also a 3- or 4-image slice where 2 is the most and vals does not fit the call's layers), or if
 *   not even 2 fit. col_ind, values and the row order (if
 *   set) must be 16-byte aligned.
 * No workspace. Bias <= 0 as for the other layer calls.
 * Packed weights: the first call that uses a descriptor builds the packed copy its kernel reads (the
 * list-pack one: device memory of ceil(rows / 128) x 34,816 bytes, about the weights again: the rows in
 * the row order with their output row, each run of rows with equal column lists storing its list once
 * per 128-row chunk; the vals-pack one where a vals kernel runs or is tried, below, as by the default
 * at n <= 1024 with sliceImages 0: ceil(rows / 128) x 36,864 bytes),
 * with one kernel and a synchronize of the handle's stream, and keeps it with
 * the descriptor until the descriptor is set again (jhdnnSetEllMatrixDescriptor /
 * jhdnnSetSparseMatrixRowOrder) or destroyed (one copy per device). Several host threads may make
 * resident calls with the same descriptors at once (each with its own handle); if their first calls
 * race, one copy is kept and the other freed. Later calls read only the copy: changes to the
 * contents of colInd, values or rowOrder after that first call are NOT seen until the descriptor is
 * set again. A first call inside a stream capture returns NOT_SUPPORTED (nothing runs): make one call
 * outside the capture first, with the same kernel and sliceImages. A call that tries a vals kernel and
 * falls back to a list-pack one keeps both copies, each freed in the same way. Environment (A/B
 * measurement only, same results; docs/api.md):
 * JHDNN_RESIDENT_KERNEL=duo (the default: unset or "") runs 16 warps (512 threads) per CTA, four
 * weight chunks at a time from a ring of 8, each chunk one bulk copy (TMA) completing on an
 * mbarrier, each lane two output rows for 4 images (quad where the ring of 8 does not fit the
 * block's shared memory, pair's shape where a call's slices hold 4 images or fewer); =quad the same
 * CTA with one row for 4 images per lane and two chunks at a time; =pair one image and 4 rows per
 * lane; =bulk the 8-warp kernel with the same copies; =packed the 8-warp kernel copying with 16-byte
 * cp.async. Where duo's rings leave no room for 4-image slices (n > 2905, as n = 4096), the call runs
 * the vals family on the vals-pack copy (slices of up to 4 images; each run of equal weight values is
 * stored once as well): vals4w (each warp a whole chunk, a ring each warp refills) where its ring fits
 * and a layer has at most 32 chunks, else valsfan where its ring fits, else pair with 2-image slices;
 * =vals, =valsfan, =vals4w run that kernel wherever it fits (slices of 0 / 1..4 images), else as duo.
 * With sliceImages 0 and n <= 1024, duo runs vals4w8 instead (since session 33): vals4w with 8 warps
 * per CTA and two CTAs per SM, 4-image slices on the vals-pack copy, its ring sized to half the SM's
 * shared memory (duo where that ring of >= 8 slots does not fit); =vals4w8 runs it wherever it fits
 * (slices of 0 / 1..4 images, n <= 2048), else as duo. Every kernel gives the same bits. */
#define JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS 1024
jhdnnStatus_t jhdnnSparseDnnLayersForwardResident(jhdnnHandle_t handle, int layerCount,
                                                  const jhdnnSparseMatrixDescriptor_t *wtDescs, float bias,
                                                  float clampMax, int maxActive, int *counts, const int *activeRows,
                                                  const int *idsIn, const void *x, int64_t ldx, void *y, int64_t ldy,
                                                  int *rowsOut, int *idsOut, int sliceImages);

/* Diagnostics of the resident launch (off unless a buffer is given; no cost in the launch without one):
 * jhdnnSparseDnnLayersForwardResidentTraced is jhdnnSparseDnnLayersForwardResident plus a device
 * buffer `trace` of at least maxActive x JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS records (8-byte
 * aligned; NULL: no trace, as the plain call; a smaller traceBytes is BAD_PARAM_SIZE_INSUFFICIENT). Slice b's records
 * are [b * RECORDS, (b + 1) * RECORDS), written by thread 0 of CTA b, or, in vals4w / vals4w8's handed schedule, of
 * whichever CTA runs that part of the slice (the record's sm says where): record 0 at entry, 1 once the slice's
 * features are in shared memory (and the first weight chunks issued), 2 once the first weight chunk has landed, 3 + k
 * at the end
 * of layer k (live = the slice's images left), RECORDS - 1 at exit (after the survivors' write-out,
 * or when the slice emptied: layer = that layer; or at once when the CTA had no image: layer -1).
 * The call first zeroes the records of its CTAs (ceil(maxActive / slice) of them, in stream order),
 * so a record with event 0 was not reached. ns: %globaltimer (comparable across SMs; its resolution
 * is the GPU's, possibly ~1 us); clk: clock64 of the SM (cycles; per-SM counter). */
#define JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS (JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS + 4)
#define JHDNN_RESIDENT_TRACE_ENTRY 1
#define JHDNN_RESIDENT_TRACE_LOADED 2
#define JHDNN_RESIDENT_TRACE_FIRST_CHUNK 3
#define JHDNN_RESIDENT_TRACE_LAYER 4
#define JHDNN_RESIDENT_TRACE_EXIT 5
typedef struct {
  unsigned long long ns;  /* %globaltimer */
  unsigned long long clk; /* clock64() */
  unsigned short sm;      /* %smid */
  unsigned short event;   /* JHDNN_RESIDENT_TRACE_*; 0: not reached */
  short layer;            /* layer of the call (0-based), -1 where none */
  short live;             /* the slice's live images after the event */
  unsigned int waitClk;   /* LAYER records: cycles thread 0 spent in the layer's per-chunk cp.async
                             wait + __syncthreads (weights late, or other warps still computing) */
  unsigned int reserved;  /* ENTRY records of vals4w / vals4w8's handed schedule (JHDNN_RESIDENT_BLOCKS, docs/api.md):
                             the layers per block it ran; else 0 */
} jhdnnSparseDnnResidentTraceRecord_t;
jhdnnStatus_t jhdnnSparseDnnLayersForwardResidentTraced(
    jhdnnHandle_t handle, int layerCount, const jhdnnSparseMatrixDescriptor_t *wtDescs, float bias, float clampMax,
    int maxActive, int *counts, const int *activeRows, const int *idsIn, const void *x, int64_t ldx, void *y,
    int64_t ldy, int *rowsOut, int *idsOut, int sliceImages, void *trace, size_t traceBytes);


/* jhdnnSparseDnnLayersForwardResidentTraced with a feature layout: NEURON_MAJOR is that call; IMAGE_MAJOR
 * reads image r of the list at x[activeRows[r] * s] and writes survivor r's last output at y[r * s]
 * (s: n rounded up to a multiple of 4), x and y 16-byte aligned (else BAD_PARAM_MISALIGNED_POINTER);
 * TILED128 is NOT_SUPPORTED, any other value BAD_PARAM. Everything else (the checks, counts, lists,
 * the trace, the kernels and their environment switches) is as the neuron-major call's, and the
 * features are bitwise those of that call: only the slice's loads and the survivors' stores differ. */
jhdnnStatus_t jhdnnSparseDnnLayersForwardResidentEx(
    jhdnnHandle_t handle, int layerCount, const jhdnnSparseMatrixDescriptor_t *wtDescs, float bias, float clampMax,
    int maxActive, int *counts, const int *activeRows, const int *idsIn, jhdnnSparseDnnFeatureLayout_t layout,
    const void *x, int64_t ldx, void *y, int64_t ldy, int *rowsOut, int *idsOut, int sliceImages, void *trace,
    size_t traceBytes);

#if defined(__cplusplus)
}
#endif

#endif /* JHDNN_H_ */
