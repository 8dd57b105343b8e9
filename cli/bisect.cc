// Failures are compared by exception type and message with every number masked ("Too many
// buffers (9)" and "(12)" are the same failure). Subsets are tried smallest first, in the
// switches' documented order, so the answer is deterministic.
#include "cli/bisect.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cli/lab_commands.h"
#include "core/replay/policy.h"
#include "scenarios/runner.h"

namespace jx::lab {
namespace {

using nlohmann::json;

// An error (type, message), or — a failure of the dispatch kind — the scan paths taken.
struct Outcome {
  bool failed = false;
  std::string type, message;
  std::set<std::string> paths;
  std::string key() const {
    return failed ? type + ": " + std::regex_replace(message, std::regex("[0-9]+"), "#")
                  : fmt::format("no error; scan paths {}", fmt::join(paths, ","));
  }
  std::string text() const {
    return failed          ? fmt::format("{}: {}", type, message)
           : paths.empty() ? "no error"
                           : fmt::format("no error, scan paths {}", fmt::join(paths, ", "));
  }
};

Outcome run_under(const Scenario& s, const std::string& backend, const std::string& profile) {
  Scenario one = s;
  one.backends = {backend};
  one.cases = {Case{profile, Expect{}, {}}};
  const CaseResult r = run_scenario(one, {"", "", 1}).at(0);  // outcomes only: one call per point
  if (r.status == "skipped")
    throw UsageError(fmt::format("jxlab bisect: backend {} is not available: {}", backend, r.skip_reason));
  Outcome o;
  for (const json& p : r.measured["points"])
    for (const json& sp : p["scan_paths"]) o.paths.insert(sp.get<std::string>());
  for (const json& p : r.measured["points"])
    if (p.contains("error")) {
      o.failed = true;
      o.type = p["error"]["type"].get<std::string>();
      o.message = p["error"]["message"].get<std::string>();
      break;
    }
  return o;
}

// The smallest subset of `on` whose switches alone give the same failure as `target`.
std::vector<std::string> smallest_set(const Scenario& s, const std::string& backend, const std::vector<std::string>& on,
                                      const Outcome& target, int& runs) {
  const std::size_t n = on.size();
  for (std::size_t size = 1; size <= n; ++size)
    for (unsigned mask = 1; mask < (1u << n); ++mask) {
      if (static_cast<std::size_t>(__builtin_popcount(mask)) != size) continue;
      std::vector<std::string> pick;
      for (std::size_t i = 0; i < n; ++i)
        if (mask & (1u << i)) pick.push_back(on[i]);
      ++runs;
      if (run_under(s, backend, kSwitchesPrefix + fmt::format("{}", fmt::join(pick, ","))).key() == target.key())
        return pick;
    }
  return on;
}

}  // namespace

int cmd_bisect(const std::string& id, const std::string& dir, const std::string& backend_name, bool as_json) {
  const auto all = load_scenarios(dir);
  auto it = std::find_if(all.begin(), all.end(), [&](const Scenario& s) { return s.id == id; });
  if (it == all.end())
    throw UsageError(fmt::format("jxlab bisect: no scenario '{}' in {} (jxlab list shows them)", id, dir));
  const Scenario& s = *it;
  const std::string backend = backend_name.empty() ? s.backends.at(0) : backend_name;
  std::vector<std::string> rows;  // the version profiles in order, then the scenario's own
  for (const auto& p : replay::profiles())
    if (p.historical) rows.push_back(p.name);
  for (const Case& c : s.cases)
    if (c.profile != "current" && std::find(rows.begin(), rows.end(), c.profile) == rows.end())
      rows.push_back(c.profile);
  rows.push_back("current");
  const Outcome current = run_under(s, backend, "current");
  // the scenario's own failure: its first case other than current (an error, or other scan paths)
  Outcome documented;
  bool has_documented = false;
  for (const Case& c : s.cases)
    if (c.profile != "current" && !has_documented) documented = run_under(s, backend, c.profile), has_documented = true;
  json out = {{"scenario", s.id}, {"backend", backend}, {"transform", s.transform}, {"rows", json::array()}};
  int runs = 1;
  std::string stops_at;
  bool seen = false;
  for (const std::string& name : rows) {
    const replay::Profile& prof = replay::profile(name);
    const Outcome o = name == "current" ? current : run_under(s, backend, name);
    ++runs;
    std::vector<std::string> minimal;
    if (o.key() != current.key()) minimal = smallest_set(s, backend, prof.policy.switches(), o, runs);
    if (prof.historical || name == "current") {
      if (has_documented && o.key() == documented.key())
        seen = true;
      else if (seen && stops_at.empty())
        stops_at = name;
    }
    out["rows"].push_back({{"profile", name},
                           {"switches", prof.policy.switches()},
                           {"failed", o.failed},
                           {"type", o.type},
                           {"message", o.message},
                           {"scan_paths", o.paths},
                           {"outcome", o.text()},
                           {"smallest_switch_set", minimal}});
  }
  out["failure"] = has_documented ? documented.text() : "";
  out["stops_at"] = stops_at;
  out["runs"] = runs;
  if (as_json) {
    fmt::print("{}\n", out.dump(1));
    return 0;
  }
  fmt::print(
      "{} on {} ({}, {}): {} runs\n\n| profile | switches | outcome | smallest switch set that reproduces it "
      "|\n|---|---|---|---|\n",
      s.id, backend, s.workload, s.transform, runs);
  for (const json& r : out["rows"]) {
    const auto sw = r["switches"].get<std::vector<std::string>>();
    const auto mn = r["smallest_switch_set"].get<std::vector<std::string>>();
    fmt::print("| {} | {} | {} | {} |\n", r["profile"].get<std::string>(),
               sw.empty() ? "-" : fmt::format("{}", fmt::join(sw, ", ")), r["outcome"].get<std::string>(),
               mn.empty() ? "-" : fmt::format("{}", fmt::join(mn, " + ")));
  }
  if (has_documented)
    fmt::print("\nThe scenario's failure ({}) {}.\n", documented.text(),
               stops_at.empty()
                   ? (seen ? "never stops across the version profiles" : "does not occur under a version profile")
                   : fmt::format("stops at {}", stops_at));
  return 0;
}

}  // namespace jx::lab
