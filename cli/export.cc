#include "cli/export.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>

#include "cli/lab_commands.h"
#include "reports/report.h"
#include "repros/program.h"
#include "scenarios/scenario.h"

namespace jx::lab {
using nlohmann::json;

int cmd_export(const std::vector<std::string>& ids, bool all, const std::string& scenarios_dir,
               const std::string& out) {
  if (all == !ids.empty()) throw UsageError("jxlab export: give scenario ids or --all, not both");
  std::vector<Scenario> chosen;
  for (const Scenario& s : load_scenarios(scenarios_dir))
    if (all ? s.program.empty() : std::find(ids.begin(), ids.end(), s.id) != ids.end()) chosen.push_back(s);
  for (const std::string& id : ids)
    if (std::none_of(chosen.begin(), chosen.end(), [&](const Scenario& s) { return s.id == id; }))
      throw UsageError(fmt::format("jxlab export: no scenario '{}' in {}", id, scenarios_dir));
  std::filesystem::create_directories(out);
  int written = 0;
  for (const Scenario& s : chosen) {
    if (!s.program.empty())
      throw UsageError(fmt::format("jxlab export: scenario '{}' already runs a program ({})", s.id, s.program));
    json params = s.params;
    if (!s.sweep_key.empty()) params[s.sweep_key] = s.sweep_values.front();
    json c;
    try {
      c = export_workload(s.workload, params, s.id);
    } catch (const Error& e) {
      if (!all) throw;
      fmt::print("skipped {}: {}\n", s.id, e.what());
      continue;
    }
    if (!s.sweep_key.empty()) {
      c["jaxpr"] = text::with_placeholder(c["jaxpr"].get<std::string>(), s.sweep_values.front().get<std::int64_t>(),
                                          s.sweep_key);
      c["params"] = {{s.sweep_key, s.sweep_values.front()}};
    }
    c["source"] = fmt::format("jxlab export {}: workload {} of {}", s.id, s.workload, s.file);
    const auto path = std::filesystem::path(out) / (s.id + ".json");
    write_atomically(path.string(), c.dump(1) + "\n");  // reports/report.h
    fmt::print("wrote {}: workload {}, {} inputs\n", path.string(), s.workload, c["inputs"].size());
    ++written;
  }
  return written > 0 ? 0 : kExitNothingRan;
}

}  // namespace jx::lab
