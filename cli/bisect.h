#pragma once
#include <string>

namespace jx::lab {

// jxlab bisect ID [--backend B] [--json]: for each replay profile a scenario's failure shows
// under (the historical ones, v0.7.1 ..., and the scenario's own), the outcome and the smallest
// set of replay switches that reproduces it from `current`; then, across the version profiles,
// the first where the scenario's failure stops.
int cmd_bisect(const std::string& id, const std::string& scenarios_dir, const std::string& backend, bool json);

}  // namespace jx::lab
