#pragma once
// report.html: one self-contained page per run (no external file, script or font): the run's
// metadata, the case table (filtered by status, backend, profile and text; the filter also read
// from the URL hash, e.g. report.html#status=fail&backend=vulkan), each case's expectations beside
// what was measured and its failures or error, one SVG plot per sweep (seconds and dispatches
// against the swept parameter, one line per backend/profile), and the diff against a baseline
// run when one is given. Everything from the report is HTML-escaped; the page's script only
// filters rows.
#include <nlohmann/json.hpp>
#include <string>

namespace jx::lab {

// report: the report.json document; diff: reports/diff.h's JSON against a baseline, or null.
std::string html_report(const nlohmann::json& report, const nlohmann::json& diff);

// Its parts (html_plots.cc): an SVG plot per sweep of the results, and the baseline diff's tables.
std::string sweep_plots(const nlohmann::json& results);
std::string diff_section(const nlohmann::json& diff);
std::string html_escape(const std::string& s);

}  // namespace jx::lab
