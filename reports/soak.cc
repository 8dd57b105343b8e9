#include "reports/soak.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/backends/cache_bound.h"
#include "core/jx.h"
#include "leakcheck/leakcheck.h"
#include "reports/report.h"

namespace jx::lab {

Trend rss_trend(const std::vector<double>& rss, double pct, double floor_kb) {
  Trend t;
  const std::size_t n = rss.size();
  if (n < 2) return t;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) mx += static_cast<double>(i), my += rss[i];
  mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (static_cast<double>(i) - mx) * (rss[i] - my);
    sxx += (static_cast<double>(i) - mx) * (static_cast<double>(i) - mx);
  }
  t.slope_kb = sxy / sxx;
  t.growth_kb = t.slope_kb * static_cast<double>(n - 1);
  t.limit_kb = std::max(rss[0] * pct / 100.0, floor_kb);
  t.growing = t.growth_kb > t.limit_kb;
  return t;
}

namespace {

SoakRound measure(int round, double seconds) {
  const MemoryStats m = memory_stats();
  SoakRound r;
  r.round = round;
  r.seconds = seconds;
  r.rss_kb = process_rss_kb();
  r.live_slots = m.live_slots;
  r.jit_cache_entries = m.jit_cache_entries;
  r.compiled_kernels = m.compiled_kernels;
  r.pipelines = m.pipelines;
  return r;
}

nlohmann::json trend_json(const Trend& t) {
  return {{"slope_kb", t.slope_kb}, {"growth_kb", t.growth_kb}, {"limit_kb", t.limit_kb}, {"growing", t.growing}};
}

}  // namespace

int soak(double minutes, const std::string& report_dir, const std::function<std::vector<CaseResult>()>& run_round,
         const nlohmann::json& meta) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(minutes * 60.0));
  std::vector<SoakRound> rounds;
  std::vector<std::string> problems;
  fmt::print("{:>5} {:>8} {:>10} {:>6} {:>6} {:>8} {:>6} {:>5} {:>5}\n", "round", "seconds", "rss MiB", "slots", "jit",
             "kernels", "pipes", "pass", "fail");
  while (rounds.size() < 4 || clock::now() < deadline) {
    const auto r0 = clock::now();
    auto results = run_round();
    SoakRound r =
        measure(static_cast<int>(rounds.size()) + 1, std::chrono::duration<double>(clock::now() - r0).count());
    for (const auto& c : results) {
      r.pass += c.status == "pass", r.fail += c.status == "fail", r.skipped += c.status == "skipped";
      if (c.status == "fail")
        problems.push_back(fmt::format("round {}: {} {} {} failed: {}", r.round, c.scenario, c.backend, c.profile,
                                       fmt::join(c.failures, "; ")));
    }
    fmt::print("{:>5} {:>8.1f} {:>10.1f} {:>6} {:>6} {:>8} {:>6} {:>5} {:>5}\n", r.round, r.seconds, r.rss_kb / 1024,
               r.live_slots, r.jit_cache_entries, r.compiled_kernels, r.pipelines, r.pass, r.fail);
    std::fflush(stdout);
    if (!rounds.empty() && r.live_slots != rounds.front().live_slots)
      problems.push_back(
          fmt::format("round {}: {} live slots, {} after round 1", r.round, r.live_slots, rounds.front().live_slots));
    if (r.jit_cache_entries > cache_capacity())
      problems.push_back(
          fmt::format("round {}: {} jit cache entries > capacity {}", r.round, r.jit_cache_entries, cache_capacity()));
    rounds.push_back(r);
  }
  std::vector<double> rss;  // round 1 is the warm-up (compiles, pools, caches fill)
  for (std::size_t i = 1; i < rounds.size(); ++i) rss.push_back(rounds[i].rss_kb);
  const Trend t = rss_trend(rss);
  if (t.growing)
    problems.push_back(
        fmt::format("RSS trends up: {:+.0f} KiB per round, {:+.0f} KiB over rounds 2-{} (limit {:.0f} KiB)", t.slope_kb,
                    t.growth_kb, rounds.size(), t.limit_kb));
  const double total = std::chrono::duration<double>(clock::now() - t0).count();
  fmt::print(
      "soak: {} rounds in {:.1f} min; RSS slope {:+.1f} KiB/round after warm-up ({:+.0f} KiB fitted, limit {:.0f}); "
      "{}\n",
      rounds.size(), total / 60, t.slope_kb, t.growth_kb, t.limit_kb, problems.empty() ? "no growth" : "FAILED");
  for (const auto& p : problems) fmt::print("    {}\n", p);
  if (!report_dir.empty()) {
    nlohmann::json j = meta;
    j.update({{"minutes", total / 60},
              {"trend", trend_json(t)},
              {"problems", problems},
              {"rounds", nlohmann::json::array()}});
    for (const auto& r : rounds)
      j["rounds"].push_back({{"round", r.round},
                             {"seconds", r.seconds},
                             {"rss_kb", r.rss_kb},
                             {"live_slots", r.live_slots},
                             {"jit_cache_entries", r.jit_cache_entries},
                             {"compiled_kernels", r.compiled_kernels},
                             {"pipelines", r.pipelines},
                             {"pass", r.pass},
                             {"fail", r.fail},
                             {"skipped", r.skipped}});
    write_atomically(report_dir + "/soak.json", j.dump(2) + "\n");
    fmt::print("soak report: {}/soak.json\n", report_dir);
  }
  return problems.empty() ? 0 : 1;
}

namespace {

Array stress_fn(const Array& x) { return np::sum(np::tanh(x * 2.0 + 1.0)) * 0.5 + np::max(x); }

// What a stress run saw: memory samples every calls/20 calls, the maxima over every call, and the
// wrong results (the first five described).
struct StressRun {
  struct Sample {
    std::size_t calls;
    double rss_kb;
    MemoryStats m;
  };
  std::vector<Sample> samples;
  std::vector<std::string> problems;
  std::size_t max_entries = 0, max_kernels = 0, max_live = 0, wrong = 0;
  double secs = 0;
};

// Shape k of a.shapes: [1 + k % 50, 1 + k / 50], filled with sin(0.37 i + k); the result and the
// expected value 0.5 Σ tanh(2x + 1) + max x computed on the host in double.
template <class F>
void stress_call(F& f, std::size_t c, std::size_t k, StressRun& r) {
  const std::int64_t rows = 1 + static_cast<std::int64_t>(k % 50), cols = 1 + static_cast<std::int64_t>(k / 50);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  double want_sum = 0, want_max = -INFINITY;
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + static_cast<double>(k)));
    want_sum += std::tanh(2.0 * x[i] + 1.0);
    want_max = std::max(want_max, static_cast<double>(x[i]));
  }
  const double want = 0.5 * want_sum + want_max;
  const Array out = f(std::vector<Array>{np::asarray(std::span<const float>(x), Shape{rows, cols})});
  const double got = out.item<double>();
  if (!(std::abs(got - want) <= 1e-4 * (1 + std::abs(want))) && r.wrong++ < 5)
    r.problems.push_back(fmt::format("call {} shape [{},{}]: got {}, want {}", c, rows, cols, got, want));
}

StressRun run_stress_calls(const StressArgs& a) {
  StressRun r;
  const auto t0 = std::chrono::steady_clock::now();
  auto f = jit([](const std::vector<Array>& in) { return stress_fn(in[0]); });
  const std::size_t every = std::max<std::size_t>(a.calls / 20, 1);
  for (std::size_t c = 0; c < a.calls; ++c) {
    stress_call(f, c, (c / 2) % a.shapes, r);  // each shape twice in a row, again after all others
    const MemoryStats m = memory_stats();
    r.max_entries = std::max(r.max_entries, m.jit_cache_entries);
    r.max_kernels = std::max(r.max_kernels, m.compiled_kernels);
    r.max_live = std::max(r.max_live, m.live_slots);
    if ((c + 1) % every == 0) r.samples.push_back({c + 1, process_rss_kb(), m});
  }
  r.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void print_stress(const StressArgs& a, const StressRun& r, const Trend& t, const MemoryStats& end,
                  std::size_t kernel_bound, std::size_t leaked) {
  fmt::print("stress jit on {}: {} calls over {} shapes in {:.1f} s ({:.0f} us/call)\n", a.backend, a.calls, a.shapes,
             r.secs, 1e6 * r.secs / static_cast<double>(a.calls));
  fmt::print("  jit cache: max {} entries (capacity {}), {} hits, {} misses, {} evictions\n", r.max_entries,
             cache_capacity(), end.cache_hits, end.cache_misses, end.cache_evictions);
  fmt::print("  compiled kernels: max {} (bound {}); live slots: max {}, leaked {}\n", r.max_kernels, kernel_bound,
             r.max_live, leaked);
  fmt::print(
      "  RSS: {:.1f} MiB at {} calls, {:.1f} MiB at the end; slope {:+.1f} KiB per {} calls after warm-up ({:+.0f} KiB "
      "fitted, limit {:.0f})\n",
      r.samples.front().rss_kb / 1024, r.samples.front().calls, r.samples.back().rss_kb / 1024, t.slope_kb,
      std::max<std::size_t>(a.calls / 20, 1), t.growth_kb, t.limit_kb);
  fmt::print("{}\n", r.problems.empty() ? "stress jit: bounded" : "stress jit: FAILED");
  for (const auto& p : r.problems) fmt::print("    {}\n", p);
}

nlohmann::json stress_json(const StressArgs& a, const StressRun& r, const Trend& t, const MemoryStats& end,
                           std::size_t kernel_bound, std::size_t leaked) {
  nlohmann::json j = {{"backend", a.backend},
                      {"calls", a.calls},
                      {"shapes", a.shapes},
                      {"seconds", r.secs},
                      {"max_jit_cache_entries", r.max_entries},
                      {"cache_capacity", cache_capacity()},
                      {"max_compiled_kernels", r.max_kernels},
                      {"kernel_bound", kernel_bound},
                      {"max_live_slots", r.max_live},
                      {"leaked_slots", leaked},
                      {"cache_hits", end.cache_hits},
                      {"cache_misses", end.cache_misses},
                      {"cache_evictions", end.cache_evictions},
                      {"trend", trend_json(t)},
                      {"problems", r.problems},
                      {"samples", nlohmann::json::array()}};
  for (const auto& s : r.samples)
    j["samples"].push_back({{"calls", s.calls},
                            {"rss_kb", s.rss_kb},
                            {"jit_cache_entries", s.m.jit_cache_entries},
                            {"compiled_kernels", s.m.compiled_kernels},
                            {"live_slots", s.m.live_slots}});
  return j;
}

}  // namespace

// Calls one jitted function over a.shapes input shapes, a.calls times: every result right, no slot
// leaked, the jit cache within its capacity, compiled kernels within their bound, and RSS flat
// after the first quarter (the caches fill to capacity there).
int cmd_stress_jit(const StressArgs& a) {
  if (a.calls == 0 || a.shapes == 0) throw Error("jxlab stress jit: --calls and --shapes must be positive");
  if (!a.out.empty()) {
    const auto slash = a.out.find_last_of('/');
    prepare_report_dir(slash == std::string::npos ? "." : a.out.substr(0, slash));
  }
  (void)backend(a.backend);  // unavailable: the reason, before any work
  DefaultDeviceScope scope(a.backend);
  const auto base = leak_baseline("stress jit");
  const std::size_t kernel_bound = kUnusedKernelLimit + 4 * cache_capacity();
  StressRun r = run_stress_calls(a);
  const auto leaked = leaked_since(base);
  if (!leaked.empty()) r.problems.push_back(leak_report("stress jit", leaked));
  if (r.wrong) r.problems.push_back(fmt::format("{} wrong results", r.wrong));
  if (r.max_entries > cache_capacity())
    r.problems.push_back(fmt::format("jit cache reached {} entries > capacity {}", r.max_entries, cache_capacity()));
  if (r.max_kernels > kernel_bound)
    r.problems.push_back(fmt::format("compiled kernels reached {} > bound {}", r.max_kernels, kernel_bound));
  std::vector<double> rss;
  for (const auto& s : r.samples)
    if (s.calls > a.calls / 4) rss.push_back(s.rss_kb);
  const Trend t = rss_trend(rss);
  if (t.growing)
    r.problems.push_back(fmt::format("RSS trends up: {:+.0f} KiB fitted over the last 3/4 of the calls (limit {:.0f})",
                                     t.growth_kb, t.limit_kb));
  const MemoryStats end = memory_stats();  // one snapshot for the summary and the file
  print_stress(a, r, t, end, kernel_bound, leaked.size());
  if (!a.out.empty()) write_atomically(a.out, stress_json(a, r, t, end, kernel_bound, leaked.size()).dump(2) + "\n");
  return r.problems.empty() ? 0 : 1;
}

}  // namespace jx::lab
