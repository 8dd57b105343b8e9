// Kalman workloads compared side by side with JAX (bench/peers/jax_kalman.py implements the same
// equations): local linear trend, m = 2, float32, the series of bench/peers/README.md.
//   seq_filter    jit(dlm::filter, scan)           sequential filter (one lax.scan)
//   seq_smoother  jit(dlm::smoothed_states, scan)  filter + reverse r/N smoother scan
//   par_filter    jit(dlm::filter, assoc)          associative-scan filter (Särkkä & García-Fernández)
//   par_smoother  jit(dlm::smoothed_states, assoc) associative-scan filter + smoother
//   par_grad      jit(value_and_grad(-2 log L, assoc)) w.r.t. the three log standard deviations
//   par_grad_fwd  the same in forward mode (value_and_grad(..., forward_mode): three jvps, each
//                 one associative scan of (element, tangent) pairs)
// Every call's result is read back inside the timed loop (the GPU's work and its wait included).
// Counters per call: dispatches, submits, host_waits (vulkan), and a checksum the driver
// compares with JAX's. Backends: JX_PEER_BACKENDS (default "native,vulkan"); sizes: JX_PEER_N
// (default 100,400,1600,6400,25600,102400); JX_PEER_SKIP ("seq_smoother:vulkan:102400,...");
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
#include "workloads/dlm/dlm.h"

using namespace jx;

namespace {

// y_t = sin(2πt/365) + 2 sin(2πt/5000) + u_t, u_t ∈ [-0.5, 0.5) from an integer hash of t (the
// same integers in Python), computed in double and rounded to float32.
std::vector<double> series(std::int64_t n) {
  std::vector<double> y(static_cast<std::size_t>(n));
  for (std::int64_t t = 0; t < n; ++t) {
    std::uint32_t h = static_cast<std::uint32_t>(t) * 2654435761u;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    const double u = static_cast<double>(h) / 4294967296.0 - 0.5;
    y[static_cast<std::size_t>(t)] = std::sin(2 * M_PI * static_cast<double>(t) / 365.0) +
                                     2 * std::sin(2 * M_PI * static_cast<double>(t) / 5000.0) + u;
  }
  return y;
}

struct Model {
  Array y, G, F, x0, C0;
  std::int64_t n;
};
Model model(std::int64_t n) {
  const DType d = DType::float32;
  Model m;
  m.n = n;
  auto ys = series(n);
  m.y = np::array(ys, Shape{n}, d);
  m.G = np::array({{1.0, 1.0}, {0.0, 1.0}}, d);
  m.F = np::array({1.0, 0.0}, d);
  m.x0 = np::array({ys[0], 0.0}, d);
  m.C0 = np::eye(2, {}, 0, d);
  return m;
}
// theta = log standard deviations (observation, level, slope)
std::pair<Array, Array> noise(const Array& theta, std::int64_t n) {
  Array sd = np::exp(theta);
  Array V = np::broadcast_to(np::index(sd, {std::int64_t{0}}), {n});
  Array W = np::eye(2, {}, 0, theta.dtype()) * np::square(np::index(sd, {np::Slice{1, 3}}));
  return {V, W};
}
Array theta0() { return np::log(np::array({0.3, 0.05, 0.002}, DType::float32)); }

using Fn = std::function<std::vector<Array>(const Array&, const Array&)>;  // (theta, y) -> outputs

Fn workload(const std::string& name, const Model& m) {
  const bool par = name.rfind("par_", 0) == 0;
  const dlm::Algorithm alg = par ? dlm::Algorithm::assoc : dlm::Algorithm::scan;
  const std::int64_t n = m.n;
  Array G = m.G, F = m.F, x0 = m.x0, C0 = m.C0;
  if (name == "seq_filter" || name == "par_filter")
    return [=](const Array& th, const Array& y) {
      auto [V, W] = noise(th, n);
      auto fo = dlm::filter(y, V, x0, G, F, W, C0, alg);
      // -2 log L from the filter's innovations, as the checksum
      Array ll = np::sum(fo[2] * fo[2] / fo[3] + np::log(fo[3]));
      return std::vector<Array>{ll, fo[0], fo[1]};
    };
  if (name == "seq_smoother" || name == "par_smoother")
    return [=](const Array& th, const Array& y) {
      auto [V, W] = noise(th, n);
      auto [xs, Cs] = dlm::smoothed_states(y, V, x0, G, F, W, C0, alg);
      return std::vector<Array>{np::sum(xs), xs, Cs};
    };
  if (name == "par_grad" || name == "par_grad_fwd")
    return [=](const Array& th, const Array& y) {
      auto loss = [&](const Array& t) {
        auto [V, W] = noise(t, n);
        return dlm::minus2_log_lik(y, V, x0, G, F, W, C0, dlm::Algorithm::assoc);
      };
      auto [v, g] = name == "par_grad" ? value_and_grad(loss)(th) : value_and_grad(loss, argnums<0>, forward_mode)(th);
      return std::vector<Array>{v, g};
    };
  throw Error("bench_peers: unknown workload " + name);
}

void run(benchmark::State& st, const std::string& name, const std::string& be) {
  DefaultDeviceScope scope(be);
  Model m = model(st.range(0));
  auto f = jit(workload(name, m));
  Array th = theta0();
  double check = f(th, m.y)[0].item<double>();  // compile and warm up
  if (be == "vulkan") {
    vulkan::reset_counters();
    vulkan::reset_timings();
  }
  double record_s = 0;  // host time of the call itself: tracing cache lookup, recording, submit
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = f(th, m.y);
    record_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check = out[0].item<double>();
  }
  const double calls = static_cast<double>(st.iterations());
  st.counters["call_us"] = record_s / calls * 1e6;
  if (be == "vulkan" && !jxbench::env("JX_VK_TIMING", "").empty()) {  // GPU time per pipeline and call, largest first
    const auto t = vulkan::timings();
    double total = 0;
    for (const auto& e : t) total += e.ms;
    std::fprintf(stderr, "%s/%s/%lld: GPU %.4f ms per call in %zu pipelines\n", name.c_str(), be.c_str(),
                 static_cast<long long>(m.n), total / calls, t.size());
    for (std::size_t i = 0; i < t.size() && i < 25; ++i)
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
    st.counters["sets_written"] =
        static_cast<double>(c.descriptor_sets) / calls;  // descriptor sets not reused from an earlier call
    if (!jxbench::env("JX_VK_TIMING", "").empty()) {     // where the host's recording time goes, µs per call
      st.counters["host_dispatch_us"] = static_cast<double>(c.host_dispatch_ns) / calls * 1e-3;
      st.counters["host_driver_us"] = static_cast<double>(c.host_driver_ns) / calls * 1e-3;
      st.counters["host_submit_us"] = static_cast<double>(c.host_submit_ns) / calls * 1e-3;
      st.counters["host_alloc_us"] = static_cast<double>(c.host_alloc_ns) / calls * 1e-3;
    }
  }
}

using jxbench::env;
using jxbench::split;

}  // namespace

int main(int argc, char** argv) {
  vulkan::ShutdownAtExit vulkan_teardown;
  const auto backends = split(env("JX_PEER_BACKENDS", "native,vulkan"));
  const auto sizes = split(env("JX_PEER_N", "100,400,1600,6400,25600,102400"));
  const auto skip = split(env("JX_PEER_SKIP", ""));
  const double min_time = std::stod(env("JX_PEER_MIN_TIME", "0.5"));  // seconds per benchmark
  for (const auto& be : backends) {
    if (!backend_available(be)) {
      std::fprintf(stderr, "bench_peers: backend %s unavailable, skipped\n", be.c_str());
      continue;
    }
    for (const char* w : {"seq_filter", "seq_smoother", "par_filter", "par_smoother", "par_grad", "par_grad_fwd"})
      for (const auto& n : sizes) {
        const std::string tag = std::string(w) + ":" + be + ":" + n;
        if (std::find(skip.begin(), skip.end(), tag) != skip.end()) continue;
        benchmark::RegisterBenchmark((std::string("kalman/") + w + "/" + be).c_str(),
                                     [w, be](benchmark::State& st) { run(st, w, be); })
            ->Arg(std::stoll(n))
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
