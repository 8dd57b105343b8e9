#pragma once
// Run-to-run comparison of two lab reports (report.json): what a CI job asks of a new run against
// a baseline. Cases are matched by name (scenario/backend/profile), points by index (the sweep).
//   status    a case whose status changed; pass -> fail (or a case that failed and now errors)
//             is a regression
//   appeared / vanished   cases only in NEW / only in OLD (not regressions: the selection changed)
//   counters  per point: dispatches, submits, max buffers per dispatch, leaked slots (a rise is a
//             regression), scan paths (a change is a regression: the documented mechanism moved)
//   timing    a case's seconds whose spread [min, max] over --repeat rounds does not overlap the
//             other run's (slower or faster beyond both runs' spread) with medians apart by more
//             than 10% and 1 ms (the noise of sub-millisecond cases). Without rounds on both
//             sides the spread is unknown: listed, never a regression.
#include <nlohmann/json.hpp>
#include <string>

namespace jx::lab {

struct ReportDiff {
  nlohmann::json json;  // {"old", "new", "status", "appeared", "vanished", "counters", "timing", "regressions"}
  int regressions = 0;
};

// Throws Error when either report is not a lab report.json.
ReportDiff diff_reports(const nlohmann::json& old_report, const nlohmann::json& new_report);
std::string diff_markdown(const ReportDiff& d);

}  // namespace jx::lab
