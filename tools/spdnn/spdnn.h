// Sparse DNN Graph Challenge helpers shared by the tests, the bench and examples/spdnn_infer. They
// do not depend on the jhDNN library: readers of the challenge's TSV formats, the RadiX-Net-style
// network generator, input scaling/tiling, and the float64 CPU reference inference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spdnn {

// Host CSR, 0-based, int32 indices, columns ascending within a row.
struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> ptr;  // rows + 1
  std::vector<int> idx;
  std::vector<float> val;
  int64_t nnz() const { return int64_t(idx.size()); }
};

// Row-major ELL: entry k of row r at r * width + k; padding idx = -1, val = 0.
struct Ell {
  int64_t rows = 0, cols = 0, width = 0;
  std::vector<int> idx;
  std::vector<float> val;
};

// The challenge's bias for a width: -0.3 (1024), -0.35 (4096), -0.4 (16384), -0.45 (65536).
// Returns 0 and sets *ok = false for any other width.
float challenge_bias(int64_t n, bool* ok = nullptr);

// The readers take a line as exactly "integer<TAB>integer<TAB>value" (any blanks between, a trailing \r
// allowed, blank lines skipped, lines of any length), a finite value, and refuse with err = "path:line: why"
// anything else: a missing or extra field, text after a number, an index out of range, the same (row,
// column) twice. Nothing is guessed (no default value, no growth past the given size).
// `n{N}-l{i}.tsv`: "row<TAB>col<TAB>value", 1-based; rows = source neuron, cols = destination; an empty
// file is refused.
bool read_layer_tsv(const std::string& path, int64_t n, Csr* w, std::string* err);
// `sparse-images-{N}.tsv`: "image<TAB>neuron<TAB>value", 1-based; `rows` images (an image number above
// it is refused), neurons 1..n.
bool read_images_tsv(const std::string& path, int64_t n, int64_t rows, Csr* y, std::string* err);
// Categories: one 1-based image number in 1..images a line (blank lines skipped); returned 0-based,
// ascending; a number given twice is refused.
bool read_categories(const std::string& path, int64_t images, std::vector<int>* cats, std::string* err);

// The generator (issue 6's spec): M = N/16, S = log2 M; layer l (1-based) is in cycle
// c = (l-1) / S, stage s = (l-1) % S; residue r(i) = i mod M in cycle 0 and perm_c(i) mod M later,
// perm_c a permutation of the N rows drawn from (seed, c); W(i, j) = 1/16 exactly when j mod M is
// r(i) or (r(i) - 2^s) mod M. N must be 16 * a power of two >= 2 (so S >= 1) and layer >= 1: the generators
// throw std::invalid_argument otherwise.
bool generator_width_ok(int64_t n);
Csr generate_layer(int64_t n, int layer, uint64_t seed);
// perm_c for cycle c >= 1 (exposed for tests).
std::vector<int> cycle_permutation(int64_t n, int cycle, uint64_t seed);

// W (rows = inputs, cols = outputs) -> W transposed as ELL (row j = the inputs of output j), the
// form jhdnnSparseDnnLayerForward takes. width = the largest column count of W.
Ell transpose_to_ell(const Csr& w);
// The same ELL built directly from the spec (no CSR, no transpose; rows ascending, so it equals
// transpose_to_ell(generate_layer(n, layer, seed))): output j's inputs are the 16 rows of residue
// j mod M and the 16 of residue (j mod M + 2^s) mod M.
Ell generate_layer_ell(int64_t n, int layer, uint64_t seed);
Csr transpose(const Csr& w);
// A processing order for the rows of an ELL in which rows with the same input list are adjacent
// (rows sorted by their entries; ties keep their order): the hint jhdnnSetSparseMatrixRowOrder takes.
std::vector<int> reuse_order(const Ell& e);
// reuse_order with its groups of equal lists chained so that consecutive lists share inputs where they can: after
// a group comes the unvisited group that shares the most input rows with it (ties: the first in reuse_order), or,
// when none shares any, the first unvisited group. In the challenge's layer of stage s it follows the residue
// chains r, r + 2^s, r + 2 x 2^s, ... (mod M), whose neighbours share 16 of their 32 inputs, so that the second
// read of an input row comes one list block after the first instead of anywhere in the layer. Any ELL: a
// permutation of the rows with every group of equal lists contiguous, as reuse_order's (padding, -1, is no input);
// inputs read by more than 64 groups are not counted as shared (they tell no neighbour apart; the time stays
// O(rows x width x 64)).
std::vector<int> chain_order(const Ell& e);

// Neuron relabelling. Every output is an fma chain over its row's entries in stored order, so renaming the neurons
// (a permutation per layer boundary, applied to one layer's rows and the next layer's entries alike) while keeping
// each row's entry order gives bitwise the same values at permuted positions. A good renaming makes a row's inputs
// runs of consecutive indices (memory locality): in the challenge's layers each row reads two residue classes of 16
// inputs, and every member of a class is read by the same rows, so each class can have 16 consecutive labels.
// Labels are new names: label[old] = new, a permutation of 0..size-1; an empty vector means the identity.
//
// label[j] for every input column j of e: columns read by exactly the same set of rows form a group, whose members
// get consecutive labels in ascending j; groups are placed in the order of their first use when scanning the rows
// in `order` (e.g. the chain_order the layer will run in), each row's entries in stored order, then the rows that
// order leaves out, ascending (an empty order: rows 0..rows-1); columns read by no row come last, ascending. The
// groups are exact (partition refinement, no hashing): O(rows x width + cols log cols) time, O(cols) memory, no
// shared state (safe on worker threads; ~20 ms for a challenge layer of N = 65536). Negative entries are padding;
// a row that reads a column twice counts once. std::invalid_argument when an entry of e is >= cols or one of order
// is outside [0, rows).
std::vector<int> reader_group_labels(const Ell& e, const std::vector<int>& order);
// Labels (as above: label[old] = new, a permutation of 0..next.cols - 1) for the neurons between two layers that
// spread the shared-memory accesses of the resident kernels vals4w / vals4w8 over their 8 bank groups
// (src/sparse/resident_banks.h: a neuron's group follows from its name). Loads: in each 64-row half of a 128-row
// chunk of `next` (its rows in next_order; empty: ascending), the distinct inputs the half-warp's 16 lanes read at
// one list position are a request, and inputs of one request in one group cost a wavefront each. Stores (where
// prev_order, the row order of the layer before, whose rows are these neurons, is given): a half-warp writes one of
// its lanes' 4 rows at a time, 16 rows a request, at best 2 to a group. A greedy colouring, neurons ascending:
// each takes the group with names left that its requests' members already coloured use least (a load clash weighs
// 4: 32 loads a chunk against 4 stores), ties to the group with the most names left; within a group ascending
// names go to ascending neurons. On the challenge's layers in chain order the loads reach the least the requests
// allow, 1 wavefront per half-warp where the identity names take ~1.5 (tests/test_sparse_cpu.cpp counts them; ncu
// agreed at 61e85f0: 2.0 a feature load against 2.8-3.3, shared wavefronts -24%, the late layer only -1.2%: it waits
// on the loads' latency; the stores, 9.1 -> 8.1 wavefronts each, are not counted right by the half-warp model).
// Exact like every relabelling; O(rows x width x 4 + n) time. std::invalid_argument when an entry is >= next.cols or
// an order is no permutation of its rows.
std::vector<int> bank_labels(const Ell& next, const std::vector<int>& next_order, const std::vector<int>& prev_order);
// e with its neurons renamed: row out_labels[r] of the result is row r of e with each entry i >= 0 replaced by
// in_labels[i]; entry order, values and padding kept (the exactness above needs the order). in_labels names e's
// inputs (size e.cols), out_labels its outputs (size e.rows); empty = identity. std::invalid_argument when a
// non-empty vector has the wrong size or is no permutation, or an entry is >= cols.
Ell relabel_ell(const Ell& e, const std::vector<int>& in_labels, const std::vector<int>& out_labels);
// m with column c renamed labels[c] (the images: rows = images, cols = neurons, renamed with the first layer's
// in_labels); each row re-sorted so that its columns stay ascending, values moving with their columns. Empty labels
// = a copy. std::invalid_argument when labels is not a permutation of 0..m.cols-1.
Csr relabel_columns(const Csr& m, const std::vector<int>& labels);
// A row order re-expressed in the new row names: result[k] = out_labels[order[k]] (empty out_labels = a copy), so
// that a reuse_order / chain_order computed before relabel_ell still names the same rows after it.
// std::invalid_argument when an entry of order is outside out_labels.
std::vector<int> map_order(const std::vector<int>& order, const std::vector<int>& out_labels);

// Nearest-neighbour upscaling of 32x32 images (N = 1024) to side 32 * f (N = 1024 * f * f); other
// columns or widths: std::invalid_argument.
Csr scale_images(const Csr& img1024, int64_t n);
// rows copies of the input rows in turn: row t is input row t % input.rows (rows >= 0; an input of no rows
// only for rows = 0: std::invalid_argument otherwise).
Csr tile_rows(const Csr& y, int64_t rows);

// Float64 CPU reference: Y <- min(max(Y * W + bias, 0), clamp), rows stored sparse. It forms no product with a zero
// feature, so on a network with non-finite weights it differs from the GPU's chains, which form Inf x 0 = NaN and
// take it to 0 through the ReLU (fmaxf); the challenge's networks have none.
class CpuInference {
 public:
  explicit CpuInference(const Csr& images);
  void layer(const Csr& w, double bias, double clamp = 32.0);
  int64_t active_rows() const;           // rows with a nonzero
  std::vector<int> categories() const;   // those rows, ascending
  // Row r of the current Y, dense (N doubles).
  std::vector<double> dense_row(int64_t r) const;
  const std::vector<std::vector<std::pair<int, double>>>& rows() const { return rows_; }

 private:
  int64_t n_;
  std::vector<std::vector<std::pair<int, double>>> rows_;
};

// Where the shared data lives: $JHDNN_SPDNN_DIR, else <repo>/data/spdnn (repo from the build).
std::string data_dir();
bool file_exists(const std::string& path);

}  // namespace spdnn
