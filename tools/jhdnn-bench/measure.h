// Timing for jhdnn-bench. Two numbers per algorithm, both medians:
//
//  GPU time (graph): `copies` launches, each on its own copy of x / w / y (inputs rotated), are
//    captured into one CUDA graph; the graph is replayed and timed with CUDA events around each
//    replay; time per launch = replay time / launches. The copies together span at least 2.5x the
//    L2 cache (when the cap on copies allows), so every launch reads its inputs from HBM, as a
//    network layer does whose input was written long ago. No host overhead is in this number.
//    When capture fails (a library that does not allow it), the same launches are timed with
//    events around an eager batch instead, and the row says "events".
//  Eager time: host wall clock over `batch` back-to-back API calls (rotating copies the same way)
//    followed by one stream synchronize, divided by batch: what a framework calling the API one
//    call at a time sees, host overhead (argument checks, dispatch, launch) included.
//
// Samples: `reps` (>= 20 by default) unless reps * one sample would exceed budget_ms; then
// fewer, never below 5. One warm-up replay / batch first.
#pragma once

#include <functional>
#include <string>

#include <cuda_runtime_api.h>

namespace jhdnn::bench {

// Enqueues one call on copy i (0 <= i < copies) on the stream; false (with *why) on failure.
using Launch = std::function<bool(int copy, std::string* why)>;

struct Timing {
  double gpu_us = -1;      // median per launch; < 0 when not measured
  std::string gpu_method;  // "graph" or "events"
  double eager_us = -1;
  int gpu_samples = 0, eager_samples = 0;
  std::string error;  // non-empty when timing failed
};

// est_us: one call's GPU time, measured before (sets launches / batch sizes).
Timing measure(const Launch& graph_launch, const Launch& eager_launch, int copies, double est_us, int reps,
               double budget_ms, cudaStream_t stream);

// One call timed with events (after a warm-up call), in microseconds; < 0 on failure.
double time_once_us(const Launch& launch, cudaStream_t stream, std::string* why);

}  // namespace jhdnn::bench
