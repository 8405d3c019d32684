// Command-line options of the small CPU tools in tools/spdnn (spdnn_l2_model, spdnn_feature_stats).
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

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

}  // namespace spdnn::cli
