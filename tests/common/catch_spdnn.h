// Catch2 glue for the tests that read the Sparse DNN Challenge data (scripts/fetch-spdnn-data.sh puts it in
// data/spdnn; JHDNN_SPDNN_DIR overrides): where the data is missing the case SKIPs, saying where it looked. Where the
// GPU tests must run (JHDNN_REQUIRE_GPU set: the GPU scripts, which carry the data), a missing file FAILs the case
// instead, as JHDNN_REQUIRE_GPU() does for a missing GPU, so that a run without the data cannot pass as a run of
// skips (ctest reports a case that skipped inside an entry of many cases as passed).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "spdnn/spdnn.h"

#define JHDNN_REQUIRE_SPDNN_DATA()                                                                             \
  do {                                                                                                         \
    const std::string jhdnn_dir_ = ::spdnn::data_dir();                                                        \
    for (const char* jhdnn_file_ : {"/neuron1024/n1024-l120.tsv", "/sparse-images-1024-first1200.tsv",        \
                                    "/neuron1024-l120-categories-first1200.tsv"}) {                            \
      if (::spdnn::file_exists(jhdnn_dir_ + jhdnn_file_)) continue;                                            \
      if (std::getenv("JHDNN_REQUIRE_GPU") != nullptr)                                                         \
        FAIL("JHDNN_REQUIRE_GPU is set but the spdnn data is missing: " << jhdnn_dir_ << jhdnn_file_);        \
      SKIP("spdnn data not found in " << jhdnn_dir_ << " (run scripts/fetch-spdnn-data.sh or set JHDNN_SPDNN_DIR)"); \
    }                                                                                                          \
  } while (0)

// The official N = 1024 data the data tests read (after JHDNN_REQUIRE_SPDNN_DATA), each read REQUIREd with the
// reader's message: the first 1200 images; their categories after 120 layers (0-based image numbers); layer l
// (1..120) as its file holds it (CSR, row = output neuron).
namespace jhdnn::test {
inline spdnn::Csr official_images() {
  spdnn::Csr images;
  std::string err;
  const bool ok = spdnn::read_images_tsv(spdnn::data_dir() + "/sparse-images-1024-first1200.tsv", 1024, 1200, &images,
                                         &err);
  INFO(err);
  REQUIRE(ok);
  return images;
}
inline std::vector<int> official_categories() {
  std::vector<int> truth;
  std::string err;
  const bool ok =
      spdnn::read_categories(spdnn::data_dir() + "/neuron1024-l120-categories-first1200.tsv", 1200, &truth, &err);
  INFO(err);
  REQUIRE(ok);
  return truth;
}
inline spdnn::Csr official_layer(int l) {
  spdnn::Csr w;
  std::string err;
  const bool ok =
      spdnn::read_layer_tsv(spdnn::data_dir() + "/neuron1024/n1024-l" + std::to_string(l) + ".tsv", 1024, &w, &err);
  INFO(err);
  REQUIRE(ok);
  return w;
}
}  // namespace jhdnn::test
