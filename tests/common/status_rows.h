// A table of API calls that must each fail with a given status and a last-error message naming the
// cause (the "bad inputs" cases of test_gemm and test_gemm_tensorcore). Header-only: it makes
// Catch2 assertions, and jhdnn_testing (linked by benchmarks and examples too) must not.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "jhdnn/jhdnn.h"

namespace jhdnn::test {

// One bad input: what it is, the call, the status it must return and a piece of the message.
struct StatusRow {
  const char* what;
  std::function<jhdnnStatus_t()> call;
  jhdnnStatus_t want;
  const char* message_part;  // substring of jhdnnGetLastErrorString() after the call
};

// Runs every row: CHECKs its status and that the last-error message contains its message_part.
inline void check_status_rows(const std::vector<StatusRow>& rows) {
  for (const StatusRow& r : rows) {
    INFO(r.what);
    const jhdnnStatus_t st = r.call();
    char buf[2048] = {};
    jhdnnGetLastErrorString(buf, sizeof buf);
    const std::string msg = buf;
    INFO("got " << jhdnnGetErrorString(st) << ": " << msg);
    CHECK(st == r.want);
    CHECK(msg.find(r.message_part) != std::string::npos);
  }
}

}  // namespace jhdnn::test
