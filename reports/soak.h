#pragma once
// Soak and stress: `jxlab run --soak MINUTES` repeats the chosen scenarios and fails on any
// growth trend; `jxlab stress jit` makes many jit calls over varying shapes in one process with
// memory and cache sizes bounded and reported.
#include <cstddef>
#include <string>
#include <vector>

#include "scenarios/runner.h"

namespace jx::lab {

// Least-squares slope of RSS over rounds (or samples) after the warm-up ones. Growing: the
// fitted growth across the measured span exceeds max(pct% of the first measured RSS, floor_kb).
struct Trend {
  double slope_kb = 0;   // per round/sample
  double growth_kb = 0;  // slope × (points − 1)
  double limit_kb = 0;
  bool growing = false;
};
Trend rss_trend(const std::vector<double>& rss_kb, double pct = 2.0, double floor_kb = 4096.0);

struct SoakRound {
  int round = 0;
  double seconds = 0, rss_kb = 0;
  std::size_t live_slots = 0, jit_cache_entries = 0, compiled_kernels = 0, pipelines = 0;
  int pass = 0, fail = 0, skipped = 0;
};

// Runs `run_round` again and again for `minutes` (at least 4 rounds: 1 warm-up + 3 to fit a
// trend); after each round records memory. Fails (returns 1) when a case failed in any round,
// live slots differ from the first round's, the jit cache exceeds its capacity, or RSS trends
// up. Writes soak.json into report_dir when given (atomically).
// meta: the run's metadata (version, commit, machine, started, context), copied into soak.json.
int soak(double minutes, const std::string& report_dir, const std::function<std::vector<CaseResult>()>& run_round,
         const nlohmann::json& meta = nlohmann::json::object());

struct StressArgs {
  std::size_t calls = 10000, shapes = 2500;
  std::string backend = "cpu", out;
};
// One jit object called `calls` times over `shapes` shapes (each seen calls/shapes times: twice
// in a row, then again after every other shape), every result checked against the host; fails
// when a value is wrong, slots leak, a cache exceeds its bound or RSS trends up after warm-up.
int cmd_stress_jit(const StressArgs& a);

}  // namespace jx::lab
