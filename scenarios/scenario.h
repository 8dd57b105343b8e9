#pragma once
// Scenario files (scenarios/*.json; format in scenarios/README.md, schema in scenario.schema.json):
// a workload replayed on backends under named replay profiles, each case with its expectations.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace jx::lab {

// A malformed or unknown scenario: "FILE: /json/pointer: reason".
struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CountExpect {  // dispatches or submits per call
  std::optional<std::int64_t> exactly, max;
  std::string growth;          // "" | constant | log2 | linear (over the sweep)
  std::int64_t log2_plus = 1;  // growth log2: count <= ceil(log2 N) + log2_plus
};
struct ErrorExpect {
  std::string type;                   // BackendError, NonlinearError, UseAfterDispose, ShapeError, ... ("" any)
  std::string message;                // ECMAScript regex, searched in the message
  std::optional<bool> values_before;  // whether values were computed before the error
};
struct ValuesExpect {
  std::string vs = "file";  // file | cpu (the same workload on cpu under `current`)
  nlohmann::json expected;  // vs file: {"name": [numbers]}
  double rtol = 1e-9, atol = 0.0;
  // outputs that must differ from the reference beyond rtol/atol (a documented wrong answer:
  // the case passes while the bug reproduces); the others must agree
  std::vector<std::string> differ;
};
struct MemoryExpect {
  std::int64_t after_call = 20;  // growth measured from this call to the last
  std::optional<double> rss_growth_pct_max, rss_growth_pct_min;
  std::optional<bool> cache_within_capacity;  // jit cache entries <= capacity at every call
  std::optional<bool> cache_entries_grow;     // entries at the last call > at after_call
};
struct Expect {
  std::optional<ErrorExpect> error;  // absent: the case must not fail
  std::optional<ValuesExpect> values;
  std::vector<std::string> scan_paths;  // every scan took one of these (and at least one ran)
  std::optional<int> max_buffers_per_dispatch;
  std::optional<CountExpect> dispatches, submits;
  std::optional<std::int64_t> host_routines;  // at most this many primitives run on the host (vulkan)
  std::optional<std::int64_t> leaked_slots;
  std::optional<MemoryExpect> memory;
};
struct Case {
  std::string profile;
  Expect expect;
  nlohmann::json expect_json;  // as written (reports show it beside what was measured)
};
// A row of the source document's version table: what that release did under each transform.
struct HistoryRow {
  std::string profile;                                          // a historical replay profile
  std::vector<std::pair<std::string, std::string>> documented;  // transform -> outcome as documented
};
struct Scenario {
  std::string file, id, title, source, description;
  std::string workload;  // a compiled-in workload (repros/), or "program:<stem>"
  std::string program;   // a program case file (path resolved from the scenario's folder)
  nlohmann::json program_inputs = nlohmann::json::object();  // how its inputs are made (repros/program.h)
  nlohmann::json params = nlohmann::json::object();
  std::string sweep_key;  // optional sweep: params[sweep_key] takes each value
  std::vector<nlohmann::json> sweep_values;
  std::string transform = "eager";
  std::vector<std::string> backends;
  std::string limits = "webgpu";
  std::optional<double> timeout_s;  // each case's time limit in its worker (default: jxlab run --timeout)
  std::vector<Case> cases;
  std::vector<HistoryRow> history;  // optional: `jxlab replay` prints it beside our outcomes
};

Scenario load_scenario(const std::string& path);
// The same from text; `path` names the file in errors and must be <id>.json.
Scenario parse_scenario(const std::string& text, const std::string& path);
// Every *.json in dir (sorted by file name); duplicate ids are an error naming both files.
std::vector<Scenario> load_scenarios(const std::string& dir);

}  // namespace jx::lab
