// What DRAM rate the late layers' access pattern can reach, apart from their arithmetic (src/sparse/README.md
// "Late4", session 24): late4 reads an input row's piece of the tile (128 images x 4 B = 512 bytes) for each of a
// block's 32 inputs and writes 16 output rows' pieces, the rows scattered over a feature map whose rows are ld
// floats apart. A late layer at N = 16384 moves ~144 MB in ~70 us (2.1 TB/s); the copy rate is 4.16 TB/s. This
// probe moves the same bytes with no arithmetic: every piece of P bytes of the used columns of `rows` rows read
// once, in the layer's order (consecutive pieces: other rows, the same columns), and a piece written for every
// `read_per_write` pieces read, by 8-warp blocks, 2 per SM (late4's occupancy). It sweeps the piece size P and the
// pieces each lane has in flight (U), and prints the rate of each: if 512-byte pieces reach the copy rate at some
// U, the layer's limit is what it keeps in flight; if only larger pieces do, it is the piece size.
//
//   spdnn_piece_probe [--rows 16384] [--images 1200] [--ld 60000] [--read-per-write 1.5] [--reps 20]
//                     [--order rows | tiles-grid | tiles-block] [--write-piece 0 | 512]
// --write-piece 512: the writes in 512-byte pieces (one output row of a 128-image tile each) while the reads sweep
// their sizes: a layer whose inputs come in wider contiguous pieces (src/sparse/README.md, "contiguous inputs per
// quad") but whose 16 output rows of a list are scattered. 0 (default): the writes as the reads.
// --order: which pieces run together. rows (default): every warp's pieces are other rows at the same columns, and
// the warps running together read the same column block of other rows; tiles-grid: a warp's pieces are other rows
// of one column block, and consecutive BLOCKS (other SMs) read the next column blocks of the same rows, as late4's
// items do (they count the tiles fastest: a slice's tiles run at the same time on neighbouring blocks);
// tiles-block: the same with consecutive WARPS of a block on the next column blocks (a block over several tiles).
//
// GPU only; exits 1 with the reason without one (a failed CUDA call: its message). Not a test: a measurement, whose
// output a GPU script keeps.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/gpu_util.h"  // CUDA_CHECK
#include "spdnn/cli_args.h"

namespace {

struct Pattern {
  const char* x;
  char* y;
  unsigned long long ld_bytes;  // a feature row's stride
  int rows;                     // a power of 2: row k of a column block is (k * 2654435761 + salt) mod rows
  int col_blocks;               // the used columns in pieces of kP bytes
  long long reads, writes;      // pieces: reads = rows x col_blocks; writes = reads / read_per_write
  int tiles;                    // 1: --order tiles-block / tiles-grid (tile_piece)
  int grid_major;               // 1: a warp's number counts the blocks fastest (--order tiles-grid)
  int write512;                 // 1: --write-piece 512, the writes in 512-byte pieces whatever the reads' size
};

// Piece p (rows vary fastest: consecutive pieces are other rows at the same columns, as late4's inputs of a tile)
// at byte offset chunk * 16 of it; salt makes the writes' rows another permutation than the reads'.
__device__ __forceinline__ unsigned long long piece_offset(const Pattern& pt, long long p, int chunk, unsigned salt,
                                                           int piece_bytes) {
  const unsigned row = (unsigned(p % pt.rows) * 2654435761u + salt) & unsigned(pt.rows - 1);
  const unsigned long long cb = static_cast<unsigned long long>(p / pt.rows);
  return row * pt.ld_bytes + cb * unsigned(piece_bytes) + unsigned(chunk) * 16u;
}

// --order tiles-*: a warp's v-th piece of its G-th group (p = G x V + v, V pieces a group) is row index
// (G div C) x V + v of column block G mod C (C column blocks): a warp's pieces in flight are other rows of one
// column block (one tile's inputs), and the warp numbered next takes the next column block of the same rows (another
// tile's pieces of the same inputs). rows is a power of 2 and V divides it, so this permutes the pieces.
__device__ __forceinline__ long long tile_piece(const Pattern& pt, long long p, long long V) {
  const long long G = p / V, v = p % V, C = pt.col_blocks;
  return ((G / C) * V + v) + (G % C) * pt.rows;  // piece_offset's numbering: row index + column block x rows
}

// kP bytes per piece, 16 per lane: a piece takes kP / 16 lanes (kP <= 512) or a warp with kP / 512 chunks a lane.
// kU: pieces a lane has loaded before it uses any (the loads in flight).
template <int kP, int kU>
__global__ void __launch_bounds__(256, 2) piece_kernel(Pattern pt, unsigned* sink) {
  constexpr int kLanes = kP < 512 ? kP / 16 : 32;     // lanes per piece
  constexpr int kChunks = kP < 512 ? 1 : kP / 512;    // 16-byte chunks per lane per piece
  constexpr int kPerWarp = 32 / kLanes;               // pieces per warp step
  const int lane = threadIdx.x & 31;
  // tiles-grid: warp w of block b is number w x grid + b, so blocks on different SMs take consecutive numbers
  const long long warp = pt.grid_major ? static_cast<long long>(threadIdx.x >> 5) * gridDim.x + blockIdx.x
                                       : (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  const int sub = lane / kLanes, chunk0 = lane % kLanes;
  uint4 acc = make_uint4(0u, 0u, 0u, 0u);
  for (long long step = warp * kU; step * kPerWarp < pt.reads; step += warps * kU) {
    uint4 v[kU][kChunks];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const long long p = (step + u) * kPerWarp + sub;
      const long long pr = pt.tiles ? tile_piece(pt, p, kU * kPerWarp) : p;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        v[u][c] = make_uint4(0u, 0u, 0u, 0u);
        if (p < pt.reads)
          v[u][c] = __ldcg(reinterpret_cast<const uint4*>(pt.x + piece_offset(pt, pr, chunk0 + 32 * c, 0u, kP)));
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const long long p = (step + u) * kPerWarp + sub;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        acc.x ^= v[u][c].x;
        acc.y += v[u][c].y;
        acc.z ^= v[u][c].z;
        acc.w += v[u][c].w;
      }
      // the writes keep pace with the reads: read piece p writes piece q = p x writes / reads when p is the
      // first read with that q (every q < writes once), to another permutation of the rows
      const long long q = p * pt.writes / pt.reads;
      if (p < pt.reads && (p == 0 || (p - 1) * pt.writes / pt.reads != q)) {
        const long long qp = pt.tiles ? tile_piece(pt, q, kU * kPerWarp) : q;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          // --write-piece 512 (pieces of 512 bytes or more): chunk c of piece q goes out as 512-byte piece
          // q x kChunks + c, each in another row (late4's 16 output rows of a tile, whatever its reads)
          const bool w512 = pt.write512 && kP >= 512;
          __stcg(reinterpret_cast<uint4*>(pt.y + (w512 ? piece_offset(pt, qp * kChunks + c, chunk0, 0x9e37u, 512)
                                                       : piece_offset(pt, qp, chunk0 + 32 * c, 0x9e37u, kP))),
                 acc);
        }
      }
    }
  }
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}

struct Row {
  int piece, unroll;
  double read_mb, write_mb, us;
};

template <int kP, int kU>
Row run(const Pattern& base, int images, double read_per_write, int reps, unsigned* sink, int grid) {
  Pattern pt = base;
  pt.col_blocks = (images * 4 + kP - 1) / kP;
  pt.reads = static_cast<long long>(pt.rows) * pt.col_blocks;
  pt.writes = static_cast<long long>(double(pt.reads) / read_per_write);
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r <= reps; ++r) {  // run 0 warms up
    CUDA_CHECK(cudaEventRecord(a));
    piece_kernel<kP, kU><<<grid, 256>>>(pt, sink);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    if (r > 0) ms.push_back(t);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return Row{kP, kU, pt.reads * double(kP) / 1e6, pt.writes * double(kP) / 1e6, ms[ms.size() / 2] * 1e3};
}

template <int kP>
void sweep(const Pattern& pt, int images, double rpw, int reps, unsigned* sink, int grid, std::vector<Row>* out) {
  out->push_back(run<kP, 1>(pt, images, rpw, reps, sink, grid));
  out->push_back(run<kP, 2>(pt, images, rpw, reps, sink, grid));
  out->push_back(run<kP, 4>(pt, images, rpw, reps, sink, grid));
  if constexpr (kP <= 512) out->push_back(run<kP, 8>(pt, images, rpw, reps, sink, grid));
}

int probe_main(int argc, char** argv) {
  for (int i = 1; i < argc; i += 2)
    if (i + 1 >= argc || (std::strcmp(argv[i], "--rows") && std::strcmp(argv[i], "--images") &&
                          std::strcmp(argv[i], "--ld") && std::strcmp(argv[i], "--reps") &&
                          std::strcmp(argv[i], "--read-per-write") && std::strcmp(argv[i], "--order") &&
                          std::strcmp(argv[i], "--write-piece"))) {
      std::fprintf(stderr, "usage: spdnn_piece_probe [--rows 16384] [--images 1200] [--ld 60000] "
                           "[--read-per-write 1.5] [--reps 20] [--order rows | tiles-grid | tiles-block] "
                           "[--write-piece 0 | 512]\n");
      return 2;
    }
  const long long rows = spdnn::cli::arg_int(argc, argv, "--rows", 16384);
  const long long images = spdnn::cli::arg_int(argc, argv, "--images", 1200);
  const long long ld = spdnn::cli::arg_int(argc, argv, "--ld", 60000);
  const long long reps = spdnn::cli::arg_int(argc, argv, "--reps", 20);
  const double read_per_write = std::atof(spdnn::cli::arg_str(argc, argv, "--read-per-write", "1.5").c_str());
  const std::string order = spdnn::cli::arg_str(argc, argv, "--order", "rows");
  const long long write_piece = spdnn::cli::arg_int(argc, argv, "--write-piece", 0);
  if (rows < 1 || (rows & (rows - 1)) != 0 || images < 1 || ld < images || ld % 4 != 0 || reps < 1 ||
      !(read_per_write >= 1.0) || (order != "rows" && order != "tiles-grid" && order != "tiles-block") ||
      (write_piece != 0 && write_piece != 512)) {
    std::fprintf(stderr, "spdnn_piece_probe: rows must be a power of 2, 1 <= images <= ld, ld a multiple of 4, "
                         "reps >= 1, read-per-write >= 1, order rows, tiles-grid or tiles-block, write-piece 0 or 512\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "spdnn_piece_probe: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int grid = 2 * prop.multiProcessorCount;
  // Room for the widest piece past the used columns (4096 bytes rounds the last column block up).
  const size_t bytes = size_t(rows) * size_t(ld) * 4 + 4096;
  char *x = nullptr, *y = nullptr;
  unsigned* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMalloc(&sink, size_t(grid) * 256 * sizeof(unsigned)));
  CUDA_CHECK(cudaMemset(x, 1, bytes));
  CUDA_CHECK(cudaMemset(y, 0, bytes));
  Pattern pt{x, y, static_cast<unsigned long long>(ld) * 4, int(rows), 0, 0, 0, order != "rows", order == "tiles-grid",
             write_piece == 512};
  std::vector<Row> out;
  sweep<128>(pt, int(images), read_per_write, int(reps), sink, grid, &out);
  sweep<256>(pt, int(images), read_per_write, int(reps), sink, grid, &out);
  sweep<512>(pt, int(images), read_per_write, int(reps), sink, grid, &out);
  sweep<1024>(pt, int(images), read_per_write, int(reps), sink, grid, &out);
  sweep<2048>(pt, int(images), read_per_write, int(reps), sink, grid, &out);
  std::printf("# %s, %d SMs, grid %d x 256; rows %lld, images %lld (%lld bytes a row used), ld %lld floats, "
              "read / write %.2f, order %s, write pieces %s, median of %lld\n",
              prop.name, prop.multiProcessorCount, grid, rows, images, images * 4, ld, read_per_write, order.c_str(),
              write_piece == 512 ? "512 bytes" : "as the reads", reps);
  std::printf("piece_bytes,pieces_in_flight_per_lane,read_MB,write_MB,us,TB_per_s\n");
  for (const Row& r : out)
    std::printf("%d,%d,%.1f,%.1f,%.1f,%.3f\n", r.piece, r.unroll, r.read_mb, r.write_mb, r.us,
                (r.read_mb + r.write_mb) / r.us);  // MB / us = TB / s
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(sink));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return probe_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdnn_piece_probe: %s\n", e.what());
    return 1;
  }
}
