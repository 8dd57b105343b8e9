#pragma once
// Cases run isolated: each (scenario, backend, profile) in its own `jxlab run` process (the worker
// writes its result as JSON), at most `jobs` at a time, each under a time limit and a memory
// limit (its resident set, polled). A worker that dies of a signal is a `crash` (the signal and
// the tail of its stderr), one past its time a `timeout`, one past its memory an `oom` (the
// figure); the rest run. A case whose backend was lost (a lost Vulkan device) fails with the
// reason and the remaining cases on that backend are skipped with it; the other backends run on.
#include <functional>
#include <string>
#include <vector>

#include "scenarios/runner.h"
#include "scenarios/scenario.h"

namespace jx::lab {

struct WorkUnit {
  const Scenario* scenario;
  std::string backend, profile;
  double timeout_s;  // the scenario's timeout_s, else --timeout
};

struct WorkerOptions {
  int jobs = 1;
  std::int64_t memory_limit_mb = 8192;
  std::string scenarios_dir;
  std::function<bool()> stop;                                    // true: start nothing more, kill the running
  std::function<void(const CaseResult&)> finished;               // as each case finishes (finishing order)
  std::function<void(const std::vector<std::string>&)> running;  // the cases now running (progress)
  bool fail_fast = false;                                        // -x: start nothing more after a failed case
  int point_calls = 3;                                           // handed to the workers (--point-calls)
};

// The results in the units' order (units never started are left out).
std::vector<CaseResult> run_isolated(const std::vector<WorkUnit>& units, const WorkerOptions& o);

}  // namespace jx::lab
