#include <cstring>

#include "api/api_common.h"

using namespace jhdnn;

extern "C" {

const char* jhdnnGetErrorString(jhdnnStatus_t status) { return core::status_name(status); }

void jhdnnGetLastErrorString(char* message, size_t max_size) {
  if (message == nullptr || max_size == 0) return;
  const char* m = core::last_error();
  const size_t len = std::strlen(m);
  const size_t n = len < max_size - 1 ? len : max_size - 1;
  std::memcpy(message, m, n);
  message[n] = '\0';
}

size_t jhdnnGetVersion(void) { return JHDNN_VERSION; }

}  // extern "C"
