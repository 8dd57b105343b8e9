#pragma once
// jxlab check: program case files (JAX's jaxprs or jx's) run on each backend under a transform,
// compared with the file's outputs and with the cpu oracle.
#include <string>
#include <vector>

namespace jx::lab {

struct CheckArgs {
  std::vector<std::string> files;
  std::string backend = "all";      // cpu | native | vulkan | all
  std::string transform = "eager";  // eager | jit | grad | jit(grad) | vmap
  std::string out;                  // write <stem>.<backend>.json here
  std::string inputs = "normal";    // generated inputs (files without any): normal | uniform | iota
};

// Exit codes: 0 every (file, backend) matches, 1 a mismatch or a run that failed, 2 a file that
// does not load (parse, type or an unsupported primitive).
int cmd_check(const CheckArgs& a);

}  // namespace jx::lab
