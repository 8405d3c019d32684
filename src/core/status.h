// Status plumbing shared by every layer: a Status carries a jhdnnStatus_t plus the message that
// jhdnnGetLastErrorString() will return, so the code that detects a failure is the code that
// explains it.
#pragma once

#include <string>

#include "jhdnn/jhdnn.h"

namespace jhdnn::core {

struct Status {
  jhdnnStatus_t code = JHDNN_STATUS_SUCCESS;
  std::string message;

  bool ok() const { return code == JHDNN_STATUS_SUCCESS; }
  static Status success() { return {}; }
};

// printf-style constructor: fail(JHDNN_STATUS_BAD_PARAM, "pad_h (%d) < 0", pad_h).
Status fail(jhdnnStatus_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last error message (set by the API shims on every failing call,
// cleared on success). Safe to use at any point of a thread's exit (no thread_local destructor);
// messages are cut at 2047 bytes.
void set_last_error(const std::string& message);
const char* last_error();

const char* status_name(jhdnnStatus_t status);
const char* data_type_name(jhdnnDataType_t t);  // "FLOAT", "HALF", ...
const char* algo_name(jhdnnConvolutionFwdAlgo_t a);  // "IMPLICIT_GEMM", ...

// Bytes per element of the data types jhDNN computes with; 0 for any other.
size_t data_type_size(jhdnnDataType_t t);

}  // namespace jhdnn::core

// Early-return helper for functions returning Status.
#define JHDNN_TRY(expr)                      \
  do {                                       \
    ::jhdnn::core::Status s_ = (expr);       \
    if (!s_.ok()) return s_;                 \
  } while (0)
