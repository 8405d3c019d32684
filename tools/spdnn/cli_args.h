// Command-line options of the small CPU tools in tools/spdnn (spdnn_l2_model, spdnn_feature_stats, ...) and their input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "spdnn/spdnn.h"

namespace spdnn::cli {

// The integer after `name`, or fallback; -1 (refused by the caller's checks) when it is not a whole number.
inline int arg_int(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) {
      char* end = nullptr;
      const long v = std::strtol(argv[i + 1], &end, 10);
      return end != argv[i + 1] && *end == '\0' && v >= 0 && v <= 1 << 30 ? int(v) : -1;
    }
  return fallback;
}
inline std::string arg_str(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return argv[i + 1];
  return fallback;
}

// The first 1200 official images (data_dir()'s sparse-images-1024-first1200.tsv, N = 1024) into *img; false, with
// the tool's name and the reason on stderr, where they cannot be read.
inline bool read_first_images(const char* tool, Csr* img) {
  std::string err;
  if (read_images_tsv(data_dir() + "/sparse-images-1024-first1200.tsv", 1024, 1200, img, &err)) return true;
  std::fprintf(stderr, "%s: %s\n", tool, err.c_str());
  return false;
}

}  // namespace spdnn::cli
