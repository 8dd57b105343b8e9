// Memory growth across jit calls: dlm_mle called again and again in one process, each call
// building fresh closures (as the documented client did). Records RSS and jit-cache entries per call.
#include <fmt/format.h>
#include <random>
#include <unistd.h>

#include <fstream>

#include "repros/repro.h"
#include "workloads/dlm/dlm.h"

namespace jx::lab {
namespace {

void mle_repeat(Run& r) {
  const std::int64_t calls = r.integer("calls", 400), n = r.integer("n", 200);
  std::mt19937 g(static_cast<unsigned>(r.integer("seed", 7)));
  std::normal_distribution<double> noise(0.0, r.num("noise", 0.1));
  std::vector<double> y(static_cast<std::size_t>(n));
  for (std::int64_t t = 0; t < n; ++t)
    y[static_cast<std::size_t>(t)] = std::sin(0.1 * static_cast<double>(t)) + noise(g);
  Array ya = np::asarray(std::span<const double>(y), Shape{n}, DType::float64);
  Array s = np::full({}, r.num("s", 0.1), DType::float64);
  dlm::Options o;
  o.order = static_cast<int>(r.integer("order", 0));
  dlm::MleOptions mo;
  mo.optimizer = dlm::MleOptions::Optimizer::newton;
  mo.max_iter = static_cast<int>(r.integer("max_iter", 50));
  std::vector<double> w(static_cast<std::size_t>(o.order + 1), 0.05);
  auto& rss = r.series["rss_kb"];
  auto& entries = r.series["cache_entries"];
  double lik = 0;
  for (std::int64_t i = 0; i < calls; ++i) {
    lik = dlm::mle(ya, s, w, o, mo).lik;
    rss.push_back(process_rss_kb());
    entries.push_back(static_cast<double>(memory_stats().jit_cache_entries));
  }
  r.values["lik"] = {lik};
  r.metrics["cache_capacity"] = static_cast<double>(cache_capacity());
  r.metrics["live_slots"] = static_cast<double>(memory_stats().live_slots);
}

}  // namespace

void register_memory(std::map<std::string, Repro>& m) {
  m["dlm_mle_repeat"] = {
      "dlm_mle_repeat",
      "dlm_mle called `calls` times in one process (params calls, n, order, max_iter, seed, noise, s)",
      mle_repeat,
      {"calls", "n", "order", "max_iter", "seed", "noise", "s"},
      {"eager"},
      {}};
}

}  // namespace jx::lab
