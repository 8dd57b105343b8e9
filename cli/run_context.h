#pragma once
// What every report says about the run that made it (jxlab run's reports, bench scaling's JSON
// and figure): read at run time, not at configure time.
#include <nlohmann/json.hpp>
#include <string>

namespace jx::lab {

std::string machine();  // "host (CPU model, N cores)"
std::string now_utc();  // ISO 8601
// command line, compiler, git commit and dirty flag of the source tree, each backend's device
// and driver (or why it is unavailable), the JX_* environment
nlohmann::json run_context(const std::string& command_line);
// "abcdef0" or "abcdef0+dirty" from a run_context, "" when not a git checkout
std::string short_commit(const nlohmann::json& context);

}  // namespace jx::lab
