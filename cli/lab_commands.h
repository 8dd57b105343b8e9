#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace jx::lab {

// A command line that asks for something impossible (exit 2, as a malformed scenario).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Exit codes of `jxlab run`, pytest's: 0 every case passed, 1 a case failed, 2 usage error or
// malformed scenario, 5 nothing ran (an empty selection, or every case skipped unless
// --allow-skips).
inline constexpr int kExitNothingRan = 5;

struct RunArgs {
  std::vector<std::string> ids;  // ids or globs ('scan-dispatch-*')
  bool all = false;
  bool allow_skips = false;
  std::vector<std::string> backends;  // only these backends (empty: each scenario's own)
  std::string profile, report, shard, scenarios;
  std::string baseline;      // --baseline DIR: report.html shows the diff against that run
  std::string keyword;       // -k: only scenarios whose id or title contains it
  bool list = false;         // --list: print the selected cases, run nothing
  bool fail_fast = false;    // -x: stop after the first scenario with a failed case
  int repeat = 1;            // --repeat N: every case N times; a case fails if any round fails
  std::string command_line;  // for the reports' metadata
  double soak_minutes = 0;   // > 0: repeat the chosen scenarios (cli/soak.h)
  // isolation (cli/workers.h): each case in a worker process, -j at a time, with limits
  int jobs = 1;
  double timeout_s = 120;
  std::int64_t memory_limit_mb = 8192;
  bool in_process = false;    // --in-process: no workers (a debugger's view; soaks run so)
  int point_calls = 3;        // --point-calls: calls per sweep point for its timing (scenarios/runner.h)
  std::string worker_result;  // set by the runner for a worker: write the case's result here
};
int cmd_list(const std::string& scenarios_dir);
// The outcome table of one scenario's workload: a row per replay profile, a column per
// transform (jit(value_and_grad), value_and_grad), on the scenario's first backend.
int cmd_replay(const std::string& id, const std::string& scenarios_dir, const std::string& backend);
int cmd_run(const RunArgs& a);
std::string default_scenarios_dir();

}  // namespace jx::lab
