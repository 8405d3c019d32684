#include "measure.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace jhdnn::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// Samples to take when one costs sample_ms: reps, or fewer (>= 5) to stay within budget_ms.
int samples_for(double sample_ms, int reps, double budget_ms) {
  if (sample_ms <= 0 || sample_ms * reps <= budget_ms) return reps;
  return std::max(std::min(reps, 5), int(budget_ms / sample_ms));
}

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    cudaEventCreate(&a);
    cudaEventCreate(&b);
  }
  ~Events() {
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
  }
  // ms between a and b after b completes; < 0 on error.
  double elapsed_ms() const {
    float ms = -1;
    if (cudaEventSynchronize(b) != cudaSuccess || cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return ms;
  }
};

bool cuda_ok(cudaError_t e, const char* what, std::string* why) {
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  *why = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

// Captures `launches` calls (copy i % copies) into a graph. Null with *why when capture fails;
// the stream is left out of capture mode either way.
cudaGraphExec_t capture(const Launch& launch, int launches, int copies, cudaStream_t stream, std::string* why) {
  if (!cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture", why))
    return nullptr;
  bool ok = true;
  for (int i = 0; i < launches && ok; ++i) ok = launch(i % copies, why);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (!ok || !cuda_ok(e, "cudaStreamEndCapture", why)) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return nullptr;
  }
  cudaGraphExec_t exec = nullptr;
  const bool inst = cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate", why);
  cudaGraphDestroy(graph);
  return inst ? exec : nullptr;
}

}  // namespace

double time_once_us(const Launch& launch, cudaStream_t stream, std::string* why) {
  Events ev;
  double ms = -1;
  for (int i = 0; i < 2; ++i) {  // 0: warm-up
    if (!cuda_ok(cudaEventRecord(ev.a, stream), "cudaEventRecord", why)) return -1;
    if (!launch(0, why)) return -1;
    if (!cuda_ok(cudaEventRecord(ev.b, stream), "cudaEventRecord", why)) return -1;
    ms = ev.elapsed_ms();
    if (ms < 0) {
      *why = "event timing failed";
      return -1;
    }
  }
  return ms * 1e3;
}

Timing measure(const Launch& graph_launch, const Launch& eager_launch, int copies, double est_us, int reps,
               double budget_ms, cudaStream_t stream) {
  Timing t;
  Events ev;
  copies = std::max(copies, 1);
  est_us = std::max(est_us, 1.0);

  // GPU time: a graph of `copies` launches (at least enough to last ~20 us, so the replay's own
  // launch cost is amortized), replayed.
  const int per_graph = std::max(copies, int(std::min(64.0, 20.0 / est_us + 1))) / copies * copies;
  std::string why;
  cudaGraphExec_t exec = capture(graph_launch, per_graph, copies, stream, &why);
  const int samples = samples_for(est_us * per_graph * 1e-3, reps, budget_ms);
  std::vector<double> v;
  if (exec != nullptr) {
    t.gpu_method = "graph";
    bool ok = cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch", &why);  // warm-up (uploads the graph)
    for (int s = 0; s < samples && ok; ++s) {
      ok = cuda_ok(cudaEventRecord(ev.a, stream), "cudaEventRecord", &why) &&
           cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch", &why) &&
           cuda_ok(cudaEventRecord(ev.b, stream), "cudaEventRecord", &why);
      const double ms = ok ? ev.elapsed_ms() : -1;
      if (ms < 0) ok = false;
      else v.push_back(ms * 1e3 / per_graph);
    }
    cudaGraphExecDestroy(exec);
    if (!ok) {
      t.error = "graph replay: " + why;
      return t;
    }
  } else {
    // Capture refused: events around eager batches of the same launches.
    t.gpu_method = "events";
    bool ok = true;
    for (int s = 0; s <= samples && ok; ++s) {
      ok = cuda_ok(cudaEventRecord(ev.a, stream), "cudaEventRecord", &why);
      for (int i = 0; i < per_graph && ok; ++i) ok = graph_launch(i % copies, &why);
      ok = ok && cuda_ok(cudaEventRecord(ev.b, stream), "cudaEventRecord", &why);
      const double ms = ok ? ev.elapsed_ms() : -1;
      if (ms < 0) ok = false;
      else if (s > 0) v.push_back(ms * 1e3 / per_graph);
    }
    if (!ok) {
      t.error = "event timing: " + why;
      return t;
    }
  }
  t.gpu_us = median(v);
  t.gpu_samples = int(v.size());

  // Eager: batches of back-to-back API calls, host clock, one sync per batch. A batch lasts about
  // 1 ms of GPU time (at least one call, at most 200), long enough that the one synchronize per
  // batch is small next to it.
  const int batch = std::max(1, std::min(200, int(1000.0 / est_us)));
  const int eager_samples = samples_for(est_us * batch * 1e-3, reps, budget_ms);
  v.clear();
  int next = 0;
  for (int s = 0; s <= eager_samples; ++s) {  // sample 0 warms up
    if (!cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize", &why)) break;
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    for (int i = 0; i < batch && ok; ++i) ok = eager_launch(next++ % copies, &why);
    ok = ok && cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize", &why);
    const auto t1 = std::chrono::steady_clock::now();
    if (!ok) {
      t.error = "eager: " + why;
      return t;
    }
    if (s > 0) v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
  }
  t.eager_us = median(v);
  t.eager_samples = int(v.size());
  return t;
}

}  // namespace jhdnn::bench
