// Test layers built from the challenge generator's (tools/spdnn) for the sparse tests: shared by test_sparse.cpp's
// reuse-tile cases and test_sparse_resident.cpp's vals cases.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "common/test_util.h"
#include "spdnn/spdnn.h"

// Gives e's rows random weights in [0, 0.125) (mean 1/16, as the challenge's), one vector per list (rows whose index
// rows are equal: the challenge's 16), then scales weight 7 of the 6th row, in row order, of every off_every-th list
// (numbered by first row, from 0) by 1.5: lists whose rows share their weights next to lists where one row does not
// (late4's shared-weight blocks and vals4w's one-load path next to the general ones).
inline void value_shared_lists(spdnn::Ell& e, int off_every, jhdnn::test::SplitMix64& g) {
  struct List {
    std::vector<float> w;
    size_t number;
    int rows = 0;  // rows seen so far
  };
  std::map<std::vector<int>, List> lists;
  const int64_t wd = e.width;
  for (int64_t j = 0; j < e.rows; ++j) {
    const std::vector<int> key(e.idx.begin() + j * wd, e.idx.begin() + (j + 1) * wd);
    auto it = lists.find(key);
    if (it == lists.end()) {
      List l{std::vector<float>(size_t(wd)), lists.size()};
      for (float& v : l.w) v = float(g.uniform() * 0.125);
      it = lists.emplace(key, std::move(l)).first;
    }
    std::copy(it->second.w.begin(), it->second.w.end(), e.val.begin() + j * wd);
    if (it->second.number % size_t(off_every) == 0 && it->second.rows++ == 5) e.val[size_t(j * wd + 7)] *= 1.5f;
  }
}
