// Host side of the tensor-core resident kernel (dnn_resident_tc.cu): one layer of a Sparse DNN as block-ELL with
// 16 x 16 bf16 weight blocks, the A operands of mma.sync m16n8k16. Pure C++ (no CUDA), unit-tested without a GPU
// (tests/test_sparse_tc_tables.cpp); tools/spdnn uses the two orderings too.
//
// The layer's rows (outputs) are taken 16 at a time in reuse order (rows with equal index lists adjacent), a group;
// its inputs are renamed (reader_group_labels: inputs read by the same rows get consecutive names) so that a group's
// inputs fall into few aligned blocks of 16 names. In the challenge's layers a row reads two residue classes of 16
// inputs, each read by exactly the 16 rows of one group and the 16 of another: every group reads two whole blocks.
// Renaming is exact (every output is the same sum of the same products), the tensor cores' summation order is not:
// see jhdnnSetSparseMatrixMathType.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jhdnn::sparse {

// A processing order for the rows of an ELL (idx: rows x width, -1 padding) in which rows with the same index list
// are adjacent: rows sorted by their entries, ties in ascending order.
std::vector<int> reuse_order(int64_t rows, int64_t width, const int* idx);

// label[j] for every input column j: columns read by exactly the same set of rows form a group, whose members get
// consecutive labels in ascending j; groups are placed in the order of their first use when scanning the rows in
// `order` (an empty order: rows 0..rows-1), each row's entries in stored order, then the rows that order leaves out,
// ascending; columns read by no row come last, ascending. Exact (partition refinement, no hashing): O(rows x width +
// cols log cols) time, O(cols) memory. Negative entries are padding; a row that reads a column twice counts once.
// Preconditions (the caller checks them): every entry < cols, every entry of order in [0, rows).
std::vector<int> reader_group_labels(int64_t rows, int64_t cols, int64_t width, const int* idx,
                                     const std::vector<int>& order);

// The logical column k (0..15) of m16n8k16's A and B that physical offset p of a block holds: p = 4 tig + q holds
// k = 2 tig + (q & 1) + 8 (q >> 1), so that the four features a lane's B fragment needs (k = 2 tig, 2 tig + 1,
// 2 tig + 8, 2 tig + 9) are the block's physical columns 4 tig .. 4 tig + 3.
#if defined(__CUDACC__)
#define JHDNN_TC_HD __host__ __device__
#else
#define JHDNN_TC_HD
#endif
JHDNN_TC_HD constexpr int tc_kc_of_offset(int p) { return 2 * (p >> 2) + (p & 1) + 8 * ((p >> 1) & 1); }

constexpr int kTcGroupRows = 16;  // rows of a group (m16)
constexpr int kTcBlocks = 2;      // blocks of 16 inputs a group reads (fewer: padded with zero weights)

struct TcLayerTables {
  std::vector<int> order;       // rows: row order[16 g + r] is row r of group g
  std::vector<int> label;       // cols: input i's column in the layer's renamed input (a permutation)
  std::vector<int> bcol;        // groups x kTcBlocks: the block's first renamed column (a multiple of 16)
  std::vector<uint32_t> afrag;  // groups x kTcBlocks x 32 lanes x 4: the block's A fragment, bf16 pairs (lower k in
                                // the low half), its columns permuted by tc_kc_of_offset
};

// The tables of an ELL layer (rows x cols, idx / val: rows x width, -1 padding), or why the layer does not fit them
// (the return value; empty on success): rows not a multiple of 16, a row that reads an input twice (the fp32 chain
// would add the two products in turn; a block holds their sum), a group whose inputs span more than kTcBlocks
// blocks, or a weight that is not a bf16 value. Preconditions as reader_group_labels'.
std::string build_tc_tables(int64_t rows, int64_t cols, int64_t width, const int* idx, const float* val,
                            TcLayerTables* t);

// Past 1024 rows the tensor-core kernel runs as a thread-block cluster (sm_90): CTA r of `ctas` takes the layer's
// groups r x G / ctas .. (r + 1) x G / ctas - 1 (G = rows / 16, contiguous in the tables' order), and holds in its
// own shared memory only the input blocks its groups read, each at a slot of its own. A block is a class of 16
// renamed inputs (label / 16); a padding block reads class 0. The previous layer's epilogue writes each output into
// every CTA whose groups read its class (distributed shared memory), so a class may be read by at most two CTAs (an
// output has at most two destinations). (The single-CTA kernel, up to 1024 rows, takes no split.)
constexpr int kTcMaxClusterCtas = 16;  // (cluster sizes past 8 are non-portable: the launch checks they fit)
constexpr int kTcMaxSlots = 128;       // blocks a CTA's buffer holds (2048 rows: plane offsets below 2^16)
struct TcClusterSlots {
  int ctas = 1, classes = 0, max_slots = 0;
  std::vector<int> slot;   // ctas x classes: class c's slot in CTA r's buffer, -1 where r's groups do not read it
  std::vector<int> cls;    // ctas x max_slots: the class at each slot, ascending, -1 past the CTA's slots
  std::vector<int> bcol;   // groups x kTcBlocks: the block's first row in its CTA's buffer (16 x slot)
};
// Where a layer's output goes in a cluster: the next layer's renamed column `lab` of it is read by the CTAs whose
// slot of class lab / 16 is set (next_slot: TcClusterSlots::slot of the next layer), each at its buffer row
// 16 x slot + lab % 16. Fills rank[0 .. count - 1] and row[] with those CTAs, ascending, and returns the count (at
// most two, as build_tc_cluster_slots checks).
JHDNN_TC_HD inline int tc_cluster_destinations(int lab, int ctas, int classes, const int* next_slot, int* rank,
                                               int* row) {
  int count = 0;
  for (int r = 0; r < ctas && count < 2; ++r) {
    const int slot = next_slot[r * classes + (lab >> 4)];
    if (slot < 0) continue;
    rank[count] = r;
    row[count++] = 16 * slot + (lab & 15);
  }
  return count;
}

// The split of layer tables t (cols inputs) over `ctas` CTAs, or why it does not fit (empty on success): the groups
// not divisible by ctas, a class read by more than two CTAs, or a CTA reading more than kTcMaxSlots blocks.
std::string build_tc_cluster_slots(int64_t cols, int ctas, const TcLayerTables& t, TcClusterSlots* s);

// The planes kernels' compactions (dnn_resident_tc_planes.cu): after call layer `done` (1, 2, 4, .., not the last;
// `stage` compaction points before it, at most `max_stages` - 1 in a call), the passes that would read the columns at
// the span it leaves before the next point could compact them again: call layers done + 1 .. 2 done, or to the end,
// where the last layer runs twice.
JHDNN_TC_HD constexpr int tc_planes_gap(int done, int stage, int layer_count, int max_stages) {
  const int next = stage + 2 < max_stages ? 2 * done : layer_count;
  return (next < layer_count ? next : layer_count) - done + (next >= layer_count ? 1 : 0);
}
// Whether the gather pays: the columns that died (span_in - live) times the passes that would read them outnumber the
// survivors it moves (a gather moves a survivor about as a layer does: a read and a write of its 2 bytes a row).
JHDNN_TC_HD constexpr bool tc_planes_gather_pays(int span_in, int live, int gap) {
  return int64_t(span_in - live) * gap > int64_t(live);
}

}  // namespace jhdnn::sparse
