// What every extern "C" shim does: run the body, turn any exception into a status, and record the
// message for jhdnnGetLastErrorString (cleared on success).
#pragma once

#include <new>

#include "core/status.h"

namespace jhdnn::api {

template <class F>
jhdnnStatus_t guarded(F&& body) {
  core::Status s;
  try {
    s = body();
  } catch (const std::bad_alloc&) {
    s = core::fail(JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "host allocation failed");
  } catch (const std::exception& e) {
    s = core::fail(JHDNN_STATUS_INTERNAL_ERROR, "internal error: %s", e.what());
  } catch (...) {
    s = core::fail(JHDNN_STATUS_INTERNAL_ERROR, "internal error: unknown exception");
  }
  core::set_last_error(s.message);
  return s.code;
}

}  // namespace jhdnn::api

// Argument checks for the shims: each names the argument.
#define JHDNN_CHECK_NULL(ptr) \
  if ((ptr) == nullptr) return ::jhdnn::core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s is NULL", #ptr)
