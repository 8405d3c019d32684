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

}  // namespace jhdnn::sparse
