#include "core/log.h"

#include <cstdio>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/config.h"

namespace jhdnn::core {
namespace {

struct LogState {
  bool on = false;
  std::FILE* out = stderr;
  std::mutex mu;
  LogState() {
    on = config::log_on();  // JHDNN_LOG, read once with every other variable
    if (!on) return;
    if (const char* f = config::log_file(); *f != '\0') {
      out = std::fopen(f, "a");
      if (out == nullptr) {
        std::fprintf(stderr, "jhdnn: cannot open JHDNN_LOG_FILE '%s' (%s); logging to stderr\n", f,
                     std::strerror(errno));
        out = stderr;
      }
    }
  }
};

LogState& state() {
  static LogState s;  // never destroyed before other statics that log: it owns only a FILE*
  return s;
}

}  // namespace

bool log_enabled() { return state().on; }

void log_line(const std::string& line) {
  LogState& s = state();
  if (!s.on) return;
  const std::string full = "jhdnn: " + line + "\n";
  std::lock_guard<std::mutex> lock(s.mu);
  std::fwrite(full.data(), 1, full.size(), s.out);
  std::fflush(s.out);
}

}  // namespace jhdnn::core
