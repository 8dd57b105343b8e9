#pragma once
// Runs scenario cases: each (case, backend) under its replay profile with trackers around the
// workload, then checks every expectation. Results carry every measured figure for the reports.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/replay/policy.h"
#include "scenarios/scenario.h"

namespace jx::lab {

struct CaseResult {
  std::string scenario, title, file, backend, profile;
  std::string status;                 // pass | fail | skipped
  std::vector<std::string> failures;  // every unmet expectation, with the figures
  std::string skip_reason;
  nlohmann::json measured = nlohmann::json::object();
  double seconds = 0;
  nlohmann::json expect = nlohmann::json::object();  // the case's expectations as written
  bool backend_lost = false;  // the backend died in this case (a lost Vulkan device): skip the rest on it
  std::string name() const { return scenario + "/" + backend + "/" + profile; }
};
// Timings of repeated calls or rounds as report.json holds them: {"rounds": [...] in order,
// "median", "min", "max"} (the median of an even count: the upper middle).
nlohmann::json seconds_spread(const std::vector<double>& rounds);

// As report.json holds it, and back (a worker process hands its result to the runner so).
nlohmann::json case_json(const CaseResult& r);
CaseResult case_from_json(const nlohmann::json& j);

// A case's profile: a named replay profile, or "switches:a,b" (exactly these switches on; "switches:"
// is current), which `jxlab bisect` uses to try subsets of a profile's switches.
inline constexpr const char* kSwitchesPrefix = "switches:";
replay::Policy policy_of(const std::string& profile);

struct RunOptions {
  std::string backend;  // only this backend ("" all of the scenario's)
  std::string profile;  // only cases of this profile ("" all)
  // each sweep point's calls for its timing (median, min, max): this many when the first call
  // took under a second, else one; counters, values and leaks are the first call's
  int point_calls = 3;
};

// One result per (case, backend) of the scenario that the options select; `progress` is called
// before each with its name.
std::vector<CaseResult> run_scenario(const Scenario& s, const RunOptions& o,
                                     const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace jx::lab
