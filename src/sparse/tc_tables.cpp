#include "sparse/tc_tables.h"

#include <algorithm>
#include <cstring>

namespace jhdnn::sparse {

std::vector<int> reuse_order(int64_t rows, int64_t width, const int* idx) {
  std::vector<int> order(static_cast<size_t>(std::max<int64_t>(rows, 0)));
  for (int64_t j = 0; j < rows; ++j) order[size_t(j)] = int(j);
  const int64_t w = width;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::lexicographical_compare(idx + a * w, idx + (a + 1) * w, idx + b * w, idx + (b + 1) * w);
  });
  return order;
}

std::vector<int> reader_group_labels(int64_t rows, int64_t cols, int64_t width, const int* idx,
                                     const std::vector<int>& order) {
  const int64_t w = width;
  // Partition refinement: the columns start as one class, and each row splits every class it reads part of into the
  // part it reads and the rest. After all rows two columns share a class exactly when no row told them apart, i.e.
  // when their reader sets are equal (exact: no hashing); the columns read by no row end up in a class of their own.
  // Class c holds member[start[c] .. start[c] + size[c]); while a row is processed the moved[c] members it reads are
  // swapped to the front of that range, so a split is two ranges side by side and costs only the part moved:
  // O(nnz + cols) for all rows, plus the sorts below.
  const size_t n = size_t(std::max<int64_t>(cols, 0));
  std::vector<int> member(n), where(n), cls(n, 0);
  for (size_t i = 0; i < n; ++i) member[i] = where[i] = int(i);
  std::vector<int> start(n + 1, 0), size(n + 1, 0), moved(n + 1, 0), touched;
  size[0] = int(cols);
  int classes = 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < w; ++k) {
      const int i = idx[r * w + k];
      if (i < 0) continue;
      const int c = cls[i], front = start[c] + moved[c];
      if (where[i] < front) continue;  // already moved: a repeat of i in this row
      const int other = member[front];
      std::swap(member[where[i]], member[front]);
      where[other] = where[i];
      where[i] = front;
      if (moved[c]++ == 0) touched.push_back(c);
    }
    for (int c : touched) {
      if (moved[c] < size[c]) {  // split: the moved front becomes a new class
        const int fresh = classes++;
        start[fresh] = start[c];
        size[fresh] = moved[c];
        start[c] += moved[c];
        size[c] -= moved[c];
        for (int t = start[fresh]; t < start[fresh] + size[fresh]; ++t) cls[member[t]] = fresh;
      }
      moved[c] = 0;
    }
    touched.clear();
  }
  for (int c = 0; c < classes; ++c) std::sort(member.begin() + start[c], member.begin() + start[c] + size[c]);
  // Place the classes at their first use: the rows in `order`, then every row ascending (which only finds the classes
  // that order's rows do not read: all of them when order is empty). A class never met is the unread columns'.
  std::vector<int> label(n, -1);
  std::vector<char> placed(size_t(classes), 0);
  int next = 0;
  auto scan = [&](int64_t r) {
    for (int64_t k = 0; k < w; ++k) {
      const int i = idx[r * w + k];
      if (i < 0 || placed[cls[i]]) continue;
      const int c = cls[i];
      placed[c] = 1;
      for (int t = start[c]; t < start[c] + size[c]; ++t) label[member[t]] = next++;
    }
  };
  for (int r : order) scan(r);
  for (int64_t r = 0; r < rows; ++r) scan(r);
  for (size_t i = 0; i < n; ++i)  // read by no row: last, ascending
    if (label[i] < 0) label[i] = next++;
  return label;
}

namespace {

// The bf16 bits of w, and whether w is a bf16 value (its low 16 bits zero: then the bits are exact).
bool bf16_exact(float w, uint16_t* bits) {
  uint32_t u = 0;
  std::memcpy(&u, &w, 4);
  *bits = uint16_t(u >> 16);
  return (u & 0xffffu) == 0u;
}

}  // namespace

std::string build_tc_tables(int64_t rows, int64_t cols, int64_t width, const int* idx, const float* val,
                            TcLayerTables* t) {
  if (rows <= 0 || rows % kTcGroupRows != 0)
    return "the layer's " + std::to_string(rows) + " rows are not a positive multiple of 16";
  t->order = reuse_order(rows, width, idx);
  t->label = reader_group_labels(rows, cols, width, idx, t->order);
  const int64_t groups = rows / kTcGroupRows;
  t->bcol.assign(size_t(groups * kTcBlocks), 0);
  t->afrag.assign(size_t(groups * kTcBlocks * 32 * 4), 0u);
  for (int64_t g = 0; g < groups; ++g) {
    int blk[kTcBlocks] = {};
    int nblk = 0;
    uint16_t a[kTcBlocks][16][16] = {};  // [block][row][logical k], bf16 bits
    for (int r = 0; r < kTcGroupRows; ++r) {
      const int64_t j = t->order[size_t(g * kTcGroupRows + r)];
      const int* list = idx + j * width;
      for (int64_t k = 0; k < width; ++k) {
        const int i = list[k];
        if (i < 0) continue;
        if (std::find(list, list + k, i) != list + k)
          return "row " + std::to_string(j) + " reads input " + std::to_string(i) + " twice";
        const int lab = t->label[size_t(i)], start = lab / 16 * 16;
        int b = 0;
        while (b < nblk && blk[b] != start) ++b;
        if (b == nblk) {
          if (nblk == kTcBlocks)
            return "the 16 rows of group " + std::to_string(g) + " (reuse order) read more than " +
                   std::to_string(kTcBlocks) + " blocks of 16 inputs";
          blk[nblk++] = start;
        }
        uint16_t bits = 0;
        if (!bf16_exact(val[j * width + k], &bits))
          return "weight (" + std::to_string(j) + ", " + std::to_string(i) + ") is not a bf16 value";
        a[b][r][tc_kc_of_offset(lab - start)] = bits;
      }
    }
    for (int b = 0; b < kTcBlocks; ++b) {
      t->bcol[size_t(g * kTcBlocks + b)] = b < nblk ? blk[b] : 0;  // (a padding block: zero weights on block 0)
      for (int lane = 0; lane < 32; ++lane) {
        const int gid = lane >> 2, tig = lane & 3;
        auto pair = [&](int row, int k) { return uint32_t(a[b][row][k]) | (uint32_t(a[b][row][k + 1]) << 16); };
        uint32_t* f = &t->afrag[size_t(((g * kTcBlocks + b) * 32 + lane) * 4)];
        f[0] = pair(gid, 2 * tig);
        f[1] = pair(gid + 8, 2 * tig);
        f[2] = pair(gid, 2 * tig + 8);
        f[3] = pair(gid + 8, 2 * tig + 8);
      }
    }
  }
  return "";
}

std::string build_tc_cluster_slots(int64_t cols, int ctas, const TcLayerTables& t, TcClusterSlots* s) {
  const int64_t groups = int64_t(t.bcol.size()) / kTcBlocks;
  if (ctas < 1 || ctas > kTcMaxClusterCtas || groups % ctas != 0)
    return "the layer's " + std::to_string(groups) + " groups of 16 rows do not split over " + std::to_string(ctas) +
           " CTAs";
  if (cols % 16 != 0) return "the layer's " + std::to_string(cols) + " inputs are not a multiple of 16";
  s->ctas = ctas;
  s->classes = int(cols / 16);
  s->slot.assign(size_t(ctas) * size_t(s->classes), -1);
  const int64_t per = groups / ctas;
  std::vector<int> readers(size_t(s->classes), 0);
  std::vector<std::vector<int>> cls(static_cast<size_t>(ctas));
  for (int r = 0; r < ctas; ++r) {
    int* const slot = &s->slot[size_t(r) * size_t(s->classes)];
    for (int64_t e = r * per * kTcBlocks; e < (r + 1) * per * kTcBlocks; ++e) slot[t.bcol[size_t(e)] / 16] = 0;
    for (int c = 0; c < s->classes; ++c)
      if (slot[c] == 0) {  // (marked: numbered in ascending class order)
        slot[c] = int(cls[size_t(r)].size());
        cls[size_t(r)].push_back(c);
        ++readers[size_t(c)];
      }
    if (cls[size_t(r)].size() > size_t(kTcMaxSlots))
      return "the groups of CTA " + std::to_string(r) + " read " + std::to_string(cls[size_t(r)].size()) +
             " blocks of 16 inputs (at most " + std::to_string(kTcMaxSlots) + ")";
    s->max_slots = std::max(s->max_slots, int(cls[size_t(r)].size()));
  }
  for (int c = 0; c < s->classes; ++c)
    if (readers[size_t(c)] > 2)
      return "inputs " + std::to_string(16 * c) + ".." + std::to_string(16 * c + 15) +
             " (renamed) are read by groups of " + std::to_string(readers[size_t(c)]) + " CTAs (at most 2)";
  s->cls.assign(size_t(ctas) * size_t(s->max_slots), -1);
  for (int r = 0; r < ctas; ++r)
    std::copy(cls[size_t(r)].begin(), cls[size_t(r)].end(), s->cls.begin() + int64_t(r) * s->max_slots);
  s->bcol.resize(t.bcol.size());
  for (size_t e = 0; e < t.bcol.size(); ++e) {
    const int r = int(int64_t(e) / kTcBlocks / per);
    s->bcol[e] = 16 * s->slot[size_t(r) * size_t(s->classes) + size_t(t.bcol[e] / 16)];
  }
  return "";
}

}  // namespace jhdnn::sparse
