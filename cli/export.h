#pragma once
#include <string>
#include <vector>

namespace jx::lab {

// jxlab export ID... | --all [--out DIR]: each scenario's compiled-in workload (its params; a
// sweep at its first value, the size written as a {name} placeholder) as a program case file
// DIR/<id>.json: jaxpr, inputs, cpu outputs.
int cmd_export(const std::vector<std::string>& ids, bool all, const std::string& scenarios_dir, const std::string& out);

}  // namespace jx::lab
