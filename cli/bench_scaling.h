#pragma once
#include <string>
#include <vector>

namespace jx::lab {

struct ScalingArgs {
  std::string backend = "vulkan", n = "100:102400", out = "build/scaling";
  int reps = 3;
  std::vector<std::string> profiles{"current"};  // replay profiles swept side by side
  std::string command_line;                      // for the metadata
};
int cmd_bench_scaling(const ScalingArgs& a);

}  // namespace jx::lab
