#pragma once
#include <optional>
#include <string>

namespace jx::lab {

struct ReduceArgs {
  std::string target;  // a scenario id or a scenario file
  std::string out;     // DIR: <id>-reduced.json and programs/<id>-reduced.json
  std::string backend, profile, transform, scenarios;
  double max_seconds = 120;
  std::optional<double> rtol, atol;  // a mismatch's tolerances (default by the outputs' dtype)
};

// jxlab reduce CASE --out DIR [--backend B] [--profile P] [--transform T] [--max-seconds S]:
// the smallest program (and transform) found that still fails as the case does, written as a
// scenario and its program case; prints equations before -> after and the moves taken.
int cmd_reduce(const ReduceArgs& a);

}  // namespace jx::lab
