#pragma once
#include <string>
#include <vector>

namespace jx::lab {

struct RunArgs {
  std::vector<std::string> ids;
  bool all = false;
  std::string backend, profile, report, shard, scenarios;
  double soak_minutes = 0;  // > 0: repeat the chosen scenarios (cli/soak.h)
};
int cmd_list(const std::string& scenarios_dir);
// The outcome table of one scenario's workload: a row per replay profile, a column per
// transform (jit(value_and_grad), value_and_grad), on the scenario's first backend.
int cmd_replay(const std::string& id, const std::string& scenarios_dir, const std::string& backend);
int cmd_run(const RunArgs& a);
std::string default_scenarios_dir();

}  // namespace jx::lab
