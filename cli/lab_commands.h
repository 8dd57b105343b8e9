#pragma once
#include <string>
#include <vector>

namespace jx::lab {

struct RunArgs {
  std::vector<std::string> ids;
  bool all = false;
  std::string backend, profile, report, shard, scenarios;
};
int cmd_list(const std::string& scenarios_dir);
int cmd_run(const RunArgs& a);
std::string default_scenarios_dir();

}  // namespace jx::lab
