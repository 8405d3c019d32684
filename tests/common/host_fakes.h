// Small host-only helpers of the tests that need no GPU: a DeviceInfo describing the H200 (for
// solver selection and plans without a device) and a substring test for status messages.
#pragma once

#include <string>

#include "core/device_info.h"

namespace jhdnn::test {

// The H200 as the solvers see it: sm_90, 132 SMs, 227 KiB of opt-in shared memory per block,
// 228 KiB per SM.
inline core::DeviceInfo fake_h200() {
  core::DeviceInfo d;
  d.cc_major = 9;
  d.sm_count = 132;
  d.smem_per_block_optin = 227 * 1024;
  d.smem_per_sm = 228 * 1024;
  return d;
}

// Whether s contains part (status messages are checked by the words that matter).
inline bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace jhdnn::test
