// Operation throughput per backend (cpu, native, vulkan), each call's result read back inside
// the timed loop: elementwise, reduction, matmul, lax.scan per path (fused, preencoded,
// fallback) and associative_scan. Counters per call: dispatches, submits, host_waits (vulkan;
// 0 elsewhere), bytes processed where it applies. JX_OPS_BACKENDS picks backends (default all
// available).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <algorithm>

#include "bench/bench_util.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/jx.h"
#include "core/replay/policy.h"

using namespace jx;

namespace {

bool wanted(const std::string& be) {
  const auto chosen = jxbench::split(jxbench::env("JX_OPS_BACKENDS", ""));
  if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), be) == chosen.end()) return false;
  return backend_available(be);
}

// Runs `call` (which must read its result back) under the benchmark loop on `be`, with the
// vulkan counters per call.
void timed(benchmark::State& st, const std::string& be, const std::function<void()>& call) {
  if (!wanted(be)) {
    st.SkipWithError(("backend " + be + " unavailable or not selected").c_str());
    return;
  }
  DefaultDeviceScope scope(be);
  call();  // compile and warm the pools
  if (be == "vulkan") vulkan::reset_counters();
  for (auto _ : st) call();
  if (be == "vulkan") {
    const auto c = vulkan::counters();
    const auto n = static_cast<double>(st.iterations());
    st.counters["dispatches"] = static_cast<double>(c.dispatches) / n;
    st.counters["submits"] = static_cast<double>(c.submits) / n;
    st.counters["host_waits"] = static_cast<double>(c.host_waits) / n;
  }
}

Array ramp(std::int64_t n, DType d = DType::float32) {
  return np::sin(np::arange(0, static_cast<double>(n), 1.0, d) * 0.001);
}

void BM_Elementwise(benchmark::State& st, const std::string& be) {
  const std::int64_t n = st.range(0);
  auto f = jit([](const Array& x) { return np::tanh(x * 1.5 + 0.25) * np::exp(-x * x); });
  std::optional<Array> x;
  timed(st, be, [&] {
    if (!x) x = device_put(ramp(n), be);
    (void)f(*x).raw_bytes();
  });
  st.SetBytesProcessed(st.iterations() * n * 4 * 2);
}

void BM_Reduction(benchmark::State& st, const std::string& be) {
  const std::int64_t n = st.range(0);
  auto f = jit([](const Array& x) { return np::sum(x * x); });
  std::optional<Array> x;
  timed(st, be, [&] {
    if (!x) x = device_put(ramp(n), be);
    (void)f(*x).item<float>();
  });
  st.SetBytesProcessed(st.iterations() * n * 4);
}

void BM_Matmul(benchmark::State& st, const std::string& be) {
  const std::int64_t n = st.range(0);
  auto f = jit([](const Array& a, const Array& b) { return np::matmul(a, b); });
  std::optional<Array> a, b;
  timed(st, be, [&] {
    if (!a) {
      a = device_put(np::reshape(ramp(n * n), {n, n}), be);
      b = device_put(np::reshape(np::cos(ramp(n * n)), {n, n}), be);
    }
    (void)f(*a, *b).raw_bytes();
  });
  st.counters["flops"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}

// c_{t+1} = 0.5 c_t + 1e-4 Σ c_t + x_t (a reduction inside the body: intra-step dependencies),
// `state` floats of carry. Paths: fused (small state), preencoded (state over the workgroup
// memory limit), fallback (replay switch no_workgroup_scan_fusion: a host loop).
void BM_Scan(benchmark::State& st, const std::string& be, std::int64_t state, bool host_loop) {
  const std::int64_t n = st.range(0);
  replay::Policy p;
  p.no_workgroup_scan_fusion = host_loop;
  replay::Scope policy(p);
  auto f = jit([](const Array& init, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair<Array, Array>{c * 0.5 + np::sum(c) * 1e-4 + x, np::sum(c)};
        },
        init, xs);
  });
  std::optional<Array> init, xs;
  timed(st, be, [&] {
    if (!init) {
      init = device_put(np::ones({state}, DType::float32), be);
      xs = device_put(np::reshape(ramp(n * state), {n, state}), be);
    }
    auto [c, ys] = f(*init, *xs);
    (void)c.raw_bytes();
  });
  st.counters["ns_per_step"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Inclusive prefix sums of [n, 2] pairs under (a, b) ⊕ (c, d) = (a·c, b·c + d) (an affine
// recurrence, the shape of the Kalman compose).
void BM_AssociativeScan(benchmark::State& st, const std::string& be) {
  const std::int64_t n = st.range(0);
  auto f = jit([](const Array& a, const Array& b) {
    auto r = lax::associative_scan(
        [](const std::pair<Array, Array>& x, const std::pair<Array, Array>& y) {
          return std::pair<Array, Array>{x.first * y.first, x.second * y.first + y.second};
        },
        std::pair<Array, Array>{a, b});
    return r.second;
  });
  std::optional<Array> a, b;
  timed(st, be, [&] {
    if (!a) {
      a = device_put(np::tanh(ramp(n)) * 0.5 + 0.5, be);
      b = device_put(ramp(n), be);
    }
    (void)f(*a, *b).raw_bytes();
  });
}

}  // namespace

BENCHMARK_CAPTURE(BM_Elementwise, cpu, "cpu")->Arg(1 << 16)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Elementwise, native, "native")
    ->Arg(1 << 16)
    ->Arg(1 << 22)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Elementwise, vulkan, "vulkan")
    ->Arg(1 << 16)
    ->Arg(1 << 22)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Reduction, cpu, "cpu")->Arg(1 << 16)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Reduction, native, "native")
    ->Arg(1 << 16)
    ->Arg(1 << 22)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Reduction, vulkan, "vulkan")
    ->Arg(1 << 16)
    ->Arg(1 << 22)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, cpu, "cpu")->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, native, "native")->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, vulkan, "vulkan")
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scan, cpu_host_loop, "cpu", 4, false)
    ->Arg(100)
    ->Arg(1600)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scan, native_compiled_loop, "native", 4, false)
    ->Arg(100)
    ->Arg(1600)
    ->Arg(25600)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scan, vulkan_fused, "vulkan", 4, false)
    ->Arg(100)
    ->Arg(1600)
    ->Arg(25600)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scan, vulkan_preencoded, "vulkan", 8192, false)
    ->Arg(100)
    ->Arg(400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scan, vulkan_fallback, "vulkan", 4, true)
    ->Arg(100)
    ->Arg(400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_AssociativeScan, cpu, "cpu")->Arg(1600)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AssociativeScan, native, "native")
    ->Arg(1600)
    ->Arg(102400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_AssociativeScan, vulkan, "vulkan")
    ->Arg(1600)
    ->Arg(102400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

JXBENCH_MAIN();
