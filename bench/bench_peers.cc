// Kalman workloads compared side by side with JAX (bench/peers/jax_kalman.py implements the same
// equations): float32, the series of bench/peers/README.md, state dimension m (JX_PEER_M,
// default 2): m = 2 local linear trend; m = 4 and 8 the trend plus 1 and 3 trigonometric
// harmonics of period 12; m = 13 the trend plus a full seasonal of period 12; m = 16 the trend
// plus 7 harmonics of period 52 (dlm::system_matrices builds G and F). W = diag(σ_level²,
// σ_slope², (σ_obs/10)² for each seasonal state): full rank, so P_{t|t-1} stays well conditioned
// in float32. Benchmarks are named kalman/<workload>/<backend>/<N>/<m>/<B>; median_ms is the median of
// the per-call times (the statistic the JAX peer reports).
//   seq_filter    jit(dlm::filter, scan)           sequential filter (one lax.scan)
//   seq_smoother  jit(dlm::smoothed_states, scan)  filter + reverse r/N smoother scan
//   par_filter    jit(dlm::filter, assoc)          associative-scan filter (Särkkä & García-Fernández)
//   par_smoother  jit(dlm::smoothed_states, assoc) associative-scan filter + smoother
//   par_grad      jit(value_and_grad(-2 log L, assoc)) w.r.t. the three log standard deviations
//   par_grad_fwd  the same in forward mode (value_and_grad(..., forward_mode): three jvps, each
//                 one associative scan of (element, tangent) pairs)
//   par_mle       the end-to-end fit: jit(fori_loop of 100 Adam steps on par_grad's loss); the
//                 checksum is the final -2 log L (opt-in: name it in JX_PEER_WORKLOADS)
// Every call's result is read back inside the timed loop (the GPU's work and its wait included).
// Counters per call: dispatches, submits, host_waits (vulkan), and a checksum the driver
// compares with JAX's. Backends: JX_PEER_BACKENDS (default "native,vulkan"); sizes: JX_PEER_N
// (default 100,400,1600,6400,25600,102400); JX_PEER_M (default 2); JX_PEER_B (series at once,
// default 1: B > 1 runs jit(vmap(workload)) over B series, dlm_peer.h: batched_workload);
// JX_PEER_WORKLOADS (default all); JX_PEER_SKIP ("seq_smoother:vulkan:102400", "...:102400:13"
// for one m, "...:102400:2:64" for one m and B);
// JX_PEER_MIN_TIME (seconds per benchmark, default 0.5).
#include <benchmark/benchmark.h>

#include <cmath>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <sstream>

#include "core/backends/vulkan/vulkan.h"
#include "bench/bench_util.h"
#include "core/jx.h"
#include <fmt/format.h>
#include "workloads/dlm/dlm_peer.h"

using namespace jx;
using namespace jx::dlm::peer;

namespace {

void run(benchmark::State& st, const std::string& name, const std::string& be) {
  DefaultDeviceScope scope(be);
  Model m = model(st.range(0), st.range(1));
  const std::int64_t batch = st.range(2);
  auto f = jit(batched_workload(name, m, batch));
  Array th = theta0();
  if (batch > 1) m.y = batch_series(m, batch);
  double check = f(th, m.y)[0].item<double>();  // compile and warm up
  if (be == "vulkan") {
    vulkan::reset_counters();
    vulkan::reset_timings();
  }
  double record_s = 0;           // host time of the call itself: tracing cache lookup, recording, submit
  std::vector<double> per_call;  // whole calls, the read-back included
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = f(th, m.y);
    record_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check = out[0].item<double>();
    per_call.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(per_call.begin(), per_call.end());
  if (!per_call.empty())
    st.counters["median_ms"] = 1e3 * (per_call[(per_call.size() - 1) / 2] + per_call[per_call.size() / 2]) / 2;
  const double calls = static_cast<double>(st.iterations());
  st.counters["call_us"] = record_s / calls * 1e6;
  if (be == "vulkan" && !jxbench::env("JX_VK_TIMING", "").empty()) {  // GPU time per pipeline and call, largest first
    const auto t = vulkan::timings();
    double total = 0, idle = 0;
    for (const auto& e : t) (e.idle ? idle : total) += e.ms;
    st.counters["gpu_busy_ms"] = total / calls;  // the device's time in the call's pipelines (the floor's measure)
    st.counters["gpu_idle_ms"] = idle / calls;   // between the call's batches, waiting for the host
    total += idle;
    std::fprintf(stderr, "%s/%s/%lld: GPU %.4f ms per call in %zu pipelines\n", name.c_str(), be.c_str(),
                 static_cast<long long>(m.n), total / calls, t.size());
    const auto top = static_cast<std::size_t>(std::stoll(jxbench::env("JX_VK_TIMING_TOP", "25")));  // pipelines listed
    for (std::size_t i = 0; i < t.size() && i < top; ++i)
      std::fprintf(stderr, "  %9.4f ms %6.1f dispatches  %s\n", t[i].ms / calls,
                   static_cast<double>(t[i].dispatches) / calls, t[i].name.c_str());
  }
  st.counters["checksum"] = check;
  // rate inverted: seconds / (steps · 1e-9) = ns per step
  st.counters["ns_per_step"] = benchmark::Counter(calls * static_cast<double>(m.n) * 1e-9,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (be == "vulkan") {
    const auto c = vulkan::counters();
    st.counters["dispatches"] = static_cast<double>(c.dispatches) / calls;
    st.counters["submits"] = static_cast<double>(c.submits) / calls;
    st.counters["host_waits"] = static_cast<double>(c.host_waits) / calls;
    st.counters["barriers"] = static_cast<double>(c.barriers) / calls;
    st.counters["buffers_created"] = static_cast<double>(c.buffers_created) / calls;
    st.counters["copies"] = static_cast<double>(c.copies) / calls;  // buffer-to-buffer copies recorded
    st.counters["sets_written"] =
        static_cast<double>(c.descriptor_sets) / calls;  // descriptor sets not reused from an earlier call
    if (!jxbench::env("JX_VK_TIMING", "").empty()) {     // where the host's recording time goes, µs per call
      st.counters["host_dispatch_us"] = static_cast<double>(c.host_dispatch_ns) / calls * 1e-3;
      st.counters["host_driver_us"] = static_cast<double>(c.host_driver_ns) / calls * 1e-3;
      st.counters["host_submit_us"] = static_cast<double>(c.host_submit_ns) / calls * 1e-3;
      st.counters["host_alloc_us"] = static_cast<double>(c.host_alloc_ns) / calls * 1e-3;
      st.counters["host_wait_us"] = static_cast<double>(c.host_wait_ns) / calls * 1e-3;
      st.counters["host_retire_us"] = static_cast<double>(c.host_retire_ns) / calls * 1e-3;
    }
  }
}

using jxbench::env;
using jxbench::split;

}  // namespace

int main(int argc, char** argv) {
  ShutdownAtExit vulkan_teardown;
  const auto backends = split(env("JX_PEER_BACKENDS", "native,vulkan"));
  const auto sizes = split(env("JX_PEER_N", "100,400,1600,6400,25600,102400"));
  const auto skip = split(env("JX_PEER_SKIP", ""));
  const auto ms = split(env("JX_PEER_M", "2"));
  const auto batches = split(env("JX_PEER_B", "1"));
  const auto workloads =
      split(env("JX_PEER_WORKLOADS", "seq_filter,seq_smoother,par_filter,par_smoother,par_grad,par_grad_fwd"));
  const double min_time = std::stod(env("JX_PEER_MIN_TIME", "0.5"));  // seconds per benchmark
  for (const auto& be : backends) {
    if (!backend_available(be)) {
      std::fprintf(stderr, "bench_peers: backend %s unavailable, skipped\n", be.c_str());
      continue;
    }
    for (const auto& w : workloads)
      for (const auto& m : ms)
        for (const auto& b : batches)
          for (const auto& n : sizes) {
            const std::string tag = w + ":" + be + ":" + n, tag_m = tag + ":" + m, tag_b = tag_m + ":" + b;
            if (std::find(skip.begin(), skip.end(), tag) != skip.end() ||
                std::find(skip.begin(), skip.end(), tag_m) != skip.end() ||
                std::find(skip.begin(), skip.end(), tag_b) != skip.end())
              continue;
            benchmark::RegisterBenchmark(("kalman/" + w + "/" + be).c_str(),
                                         [w, be](benchmark::State& st) { run(st, w, be); })
                ->Args({std::stoll(n), std::stoll(m), std::stoll(b)})
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->MinTime(min_time);
          }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
