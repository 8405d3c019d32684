// JHDNN_LOG: the library's call log. With JHDNN_LOG=1 in the environment every convolution API
// call writes a line that replays it as a jhdnn-bench command, then the solver dispatch chose and
// each solver it passed over with the reason:
//
//   jhdnn: jhdnnConvolutionForward: jhdnn-bench --dir=fwd --dt=f16 --layout=nhwc --algo=IMPLICIT_GEMM mb32ic64ih56oc64oh56kh3ph1
//   jhdnn:   rejected implicit_gemm_tc: needs C/G a multiple of 8
//   jhdnn:   chose implicit_gemm (workspace 0 bytes)
//
// Lines go to stderr, or are appended to the file JHDNN_LOG_FILE names. The environment is read
// once per process (the first call); logging off costs one branch per call.
#pragma once

#include <string>

namespace jhdnn::core {

// True when JHDNN_LOG is set to anything but "" or "0".
bool log_enabled();

// Writes "jhdnn: " + line + "\n" atomically (one write per line, serialized across threads).
void log_line(const std::string& line);

}  // namespace jhdnn::core
