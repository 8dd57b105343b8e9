#pragma once
// Lab reports: JSON (every measured figure), a Markdown summary and JUnit XML, each written
// atomically (a temporary file in the same directory, then rename), so a run killed midway
// leaves either the previous report or the new one, never half of one.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenarios/runner.h"

namespace jx::lab {

struct ReportMeta {
  std::string version, commit, machine, started;  // started: ISO 8601 UTC
  double seconds = 0;
  bool interrupted = false;  // SIGINT/SIGTERM: the finished cases only
  // the run's context: commit and dirty flag read at run time, compiler, devices (backend,
  // device, driver), the JX_* environment, the command line
  nlohmann::json context = nlohmann::json::object();
  std::string baseline;  // a previous run's report folder or report.json: report.html shows the diff against it
};

// Creates dir if needed and checks it is writable; throws Error naming it otherwise. Called
// before any work starts. Removes temporary files left by runs killed while writing.
void prepare_report_dir(const std::string& dir);
void write_atomically(const std::string& path, const std::string& content);
// A previous run's report.json (PATH or PATH/report.json); throws Error naming it otherwise.
nlohmann::json read_baseline(const std::string& path);
void write_reports(const std::string& dir, const std::vector<CaseResult>& results, const ReportMeta& meta);

std::string markdown_summary(const std::vector<CaseResult>& results, const ReportMeta& meta);
std::string junit_xml(const std::vector<CaseResult>& results, const ReportMeta& meta);

}  // namespace jx::lab
