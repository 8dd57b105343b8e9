// Native backend benchmarks (Google Benchmark). Run: build/bench/bench_native
//   --benchmark_out=bench/results/<date>-<machine>.json --benchmark_out_format=json
// Ratios that matter are computed from one run: elementwise GB/s against the memcpy GB/s of
// the same run, Kalman steps/s against the target (20 M/s on one core).
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <cstring>

#include "core/jx.h"
#include "workloads/dlm/dlm_io.h"
#include "workloads/kalman/local_linear_trend.h"

using namespace jx;

namespace {

void BM_Memcpy(benchmark::State& st) {  // the machine's copy bandwidth, same buffer sizes
  const std::size_t n = static_cast<std::size_t>(st.range(0)) * 4;
  std::vector<char> a(n, 1), b(n);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 2 * n));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 22)->UseRealTime();

void BM_Elementwise(benchmark::State& st, const char* be) {  // y = exp(x) * 2 + 1, float32
  DefaultDeviceScope scope(be);
  const std::int64_t n = st.range(0);
  Array x = np::ones({n}) * 0.5;
  auto f = jit([](const Array& a) { return a * 2.0 + 1.0; });
  (void)f(x);
  for (auto _ : st) benchmark::DoNotOptimize(f(x).slot());
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 2 * n * 4));
}
BENCHMARK_CAPTURE(BM_Elementwise, native, "native")->Arg(1 << 22)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Elementwise, cpu, "cpu")->Arg(1 << 18)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Sum(benchmark::State& st, const char* be) {
  DefaultDeviceScope scope(be);
  const std::int64_t n = st.range(0);
  Array x = np::ones({n}, DType::float64);
  auto f = jit([](const Array& a) { return np::sum(a); });
  (void)f(x);
  for (auto _ : st) benchmark::DoNotOptimize(f(x).slot());
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * n * 8));
}
BENCHMARK_CAPTURE(BM_Sum, native, "native")->Arg(1 << 22)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KalmanFilter(benchmark::State& st, const char* be) {  // jit(lax.scan), m = 2, float64
  DefaultDeviceScope scope(be);
  const std::int64_t n = st.range(0);
  Array ys = workloads::simulate_local_linear_trend(n, 7);
  Array theta = np::log(np::array({100.0, 30.0, 1.0}, DType::float64));
  auto f = jit(workloads::local_linear_trend_filter);
  (void)f(theta, ys);
  // reading -2 log L makes GPU backends finish the work inside the timed loop
  for (auto _ : st) benchmark::DoNotOptimize(f(theta, ys).first.item<double>());
  st.SetItemsProcessed(st.iterations() * n);  // items = filter steps
  st.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(st.iterations() * n), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_KalmanFilter, native, "native")
    ->RangeMultiplier(4)
    ->Range(100, 102400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KalmanFilter, cpu, "cpu")->Arg(100)->Arg(1600)->Unit(benchmark::kMicrosecond)->UseRealTime();
// vulkan: the fused single-workgroup loop (run N > 1600 on a GPU; lavapipe takes ~50 µs per step)
BENCHMARK_CAPTURE(BM_KalmanFilter, vulkan, "vulkan")
    ->RangeMultiplier(4)
    ->Range(100, 102400)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_KalmanGrad(benchmark::State& st, const char* be) {  // jit(value_and_grad) of the log-likelihood
  DefaultDeviceScope scope(be);
  const std::int64_t n = st.range(0);
  Array ys = workloads::simulate_local_linear_trend(n, 7);
  Array theta = np::log(np::array({100.0, 30.0, 1.0}, DType::float64));
  auto f = jit(
      value_and_grad([](const Array& t, const Array& y) { return workloads::local_linear_trend_filter(t, y).first; }));
  (void)f(theta, ys);
  for (auto _ : st) benchmark::DoNotOptimize(f(theta, ys).second.to_vector<double>());
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK_CAPTURE(BM_KalmanGrad, native, "native")
    ->Arg(100)
    ->Arg(1600)
    ->Arg(25600)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KalmanGrad, vulkan, "vulkan")
    ->Arg(100)
    ->Arg(1600)
    ->Arg(25600)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

dlm::Input nile() { return dlm::read_input(std::string(JX_SOURCE_DIR) + "/tests/data/dlm/niledemo-in.json"); }

void BM_DlmFit(benchmark::State& st, const char* be, const char* alg) {  // Nile, order 1, tiled to N; two-pass fit
  DefaultDeviceScope scope(be);
  auto in = nile();
  in.options.algorithm = dlm::parse_algorithm(alg);
  std::vector<double> y;
  while (static_cast<std::int64_t>(y.size()) < st.range(0)) y.insert(y.end(), in.y.begin(), in.y.end());
  y.resize(static_cast<std::size_t>(st.range(0)));
  Array ya = np::array(y, std::nullopt, DType::float64), s = np::scalar(in.s[0], DType::float64);
  (void)dlm::fit(ya, s, in.w, in.options);
  for (auto _ : st) benchmark::DoNotOptimize(dlm::fit(ya, s, in.w, in.options).lik);
  st.SetItemsProcessed(st.iterations() * st.range(0));
}
BENCHMARK_CAPTURE(BM_DlmFit, native_scan, "native", "scan")
    ->RangeMultiplier(4)
    ->Range(100, 102400)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmFit, native_assoc, "native", "assoc")
    ->RangeMultiplier(4)
    ->Range(100, 102400)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// vulkan (lavapipe here): N <= 16384 (llvmpipe refuses reduction loops over 65535 elements)
BENCHMARK_CAPTURE(BM_DlmFit, vulkan_scan, "vulkan", "scan")
    ->Arg(100)
    ->Arg(1600)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmFit, vulkan_assoc, "vulkan", "assoc")
    ->Arg(100)
    ->Arg(1600)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmFit, cpu_scan, "cpu", "scan")
    ->Arg(100)
    ->Arg(3200)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmFit, cpu_assoc, "cpu", "assoc")
    ->Arg(100)
    ->Arg(3200)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_DlmMle(benchmark::State& st, const char* be, const char* alg) {  // Nile, order 1, Newton with the exact Hessian
  DefaultDeviceScope scope(be);
  auto in = nile();
  in.options.algorithm = dlm::parse_algorithm(alg);
  Array ya = np::array(in.y, std::nullopt, DType::float64), s = np::scalar(in.s[0], DType::float64);
  (void)dlm::mle(ya, s, in.w, in.options);  // compile (or load from the disk cache) once
  double lik = 0;
  for (auto _ : st) lik = dlm::mle(ya, s, in.w, in.options).lik;
  st.counters["minus2logL"] = lik;
}
BENCHMARK_CAPTURE(BM_DlmMle, native_scan, "native", "scan")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmMle, native_assoc, "native", "assoc")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmMle, vulkan_scan, "vulkan", "scan")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmMle, vulkan_assoc, "vulkan", "assoc")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmMle, cpu_scan, "cpu", "scan")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DlmMle, cpu_assoc, "cpu", "assoc")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

JXBENCH_MAIN();
