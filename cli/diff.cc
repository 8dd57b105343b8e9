#include "cli/diff.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "cli/lab_commands.h"
#include "reports/diff.h"
#include "reports/report.h"

namespace jx::lab {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_report(const std::string& path) {
  fs::path p = path;
  if (fs::is_directory(p)) p /= "report.json";
  std::ifstream in(p);
  if (!in) throw UsageError(fmt::format("jxlab diff: cannot read {} (a report folder or its report.json)", p.string()));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UsageError(fmt::format("jxlab diff: {} is not valid JSON", p.string()));
  if (!j.is_object() || !j.contains("results"))
    throw UsageError(fmt::format("jxlab diff: {} is not a lab report (no \"results\")", p.string()));
  return j;
}

}  // namespace

int cmd_diff(const std::string& old_path, const std::string& new_path, bool as_json, const std::string& out) {
  const ReportDiff d = diff_reports(read_report(old_path), read_report(new_path));
  const std::string text = as_json ? d.json.dump(2) + "\n" : diff_markdown(d);
  if (!out.empty()) write_atomically(out, text);
  fmt::print("{}", text);
  std::fflush(stdout);
  return d.regressions > 0 ? 1 : 0;
}

}  // namespace jx::lab
