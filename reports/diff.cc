#include "reports/diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cmath>
#include <map>

#include "core/base/errors.h"

namespace jx::lab {
namespace {

using nlohmann::json;

constexpr double kTimingFloorSeconds = 1e-3, kTimingFloorRatio = 0.10;

std::string case_name(const json& r) {
  return fmt::format("{} {} {}", r.value("scenario", "?"), r.value("backend", "?"), r.value("profile", "?"));
}

std::map<std::string, json> cases_of(const json& report, const char* which) {
  if (!report.is_object() || !report.contains("results") || !report["results"].is_array())
    throw Error(fmt::format("jxlab diff: the {} report is not a lab report.json (no \"results\" array)", which));
  std::map<std::string, json> m;
  for (const json& r : report["results"]) m[case_name(r)] = r;
  return m;
}

// [min, max] of a case's seconds: its --repeat rounds, or a single figure (known = false).
struct Spread {
  double median = 0, min = 0, max = 0;
  bool known = false;
};
Spread spread_of(const json& r) {
  Spread s;
  const json& m = r.value("measured", json::object());
  if (m.contains("seconds_rounds") && m["seconds_rounds"].value("rounds", json::array()).size() >= 2) {
    const json& q = m["seconds_rounds"];
    return {q["median"].get<double>(), q["min"].get<double>(), q["max"].get<double>(), true};
  }
  s.median = s.min = s.max = r.value("seconds", 0.0);
  return s;
}

// A status change is a regression when the new one is worse: pass -> fail, or a case that ran
// and now crashes, times out or runs out of memory.
int rank(const std::string& status) {
  if (status == "pass") return 0;
  if (status == "skipped") return 0;
  if (status == "fail") return 1;
  return 2;  // crash, timeout, oom, error
}

// Counter changes of one case, point by point; adds regressions.
void counters(const std::string& name, const json& o, const json& n, json& out, int& regressions) {
  const json op = o.value("measured", json::object()).value("points", json::array());
  const json np_ = n.value("measured", json::object()).value("points", json::array());
  for (std::size_t i = 0; i < std::min(op.size(), np_.size()); ++i) {
    for (const char* k : {"dispatches", "submits", "max_buffers_per_dispatch", "leaked_slots"}) {
      if (!op[i].contains(k) || !np_[i].contains(k) || op[i][k] == np_[i][k]) continue;
      const bool worse = np_[i][k].get<double>() > op[i][k].get<double>();
      out.push_back(
          {{"case", name}, {"point", i}, {"counter", k}, {"old", op[i][k]}, {"new", np_[i][k]}, {"regression", worse}});
      regressions += worse;
    }
    const json os = op[i].value("scan_paths", json::array()), ns = np_[i].value("scan_paths", json::array());
    if (os != ns) {
      out.push_back(
          {{"case", name}, {"point", i}, {"counter", "scan_paths"}, {"old", os}, {"new", ns}, {"regression", true}});
      ++regressions;
    }
  }
  if (op.size() != np_.size())
    out.push_back(
        {{"case", name}, {"counter", "points"}, {"old", op.size()}, {"new", np_.size()}, {"regression", false}});
}

void timing(const std::string& name, const json& o, const json& n, json& out, int& regressions) {
  const Spread a = spread_of(o), b = spread_of(n);
  // beyond both spreads, and above the noise floor of sub-millisecond cases
  const bool material = std::abs(b.median - a.median) > std::max(kTimingFloorSeconds, kTimingFloorRatio * a.median);
  const bool slower = b.min > a.max && material, faster = b.max < a.min && material;
  if (!slower && !faster) return;
  const bool known = a.known && b.known;
  out.push_back({{"case", name},
                 {"old", {{"median", a.median}, {"min", a.min}, {"max", a.max}}},
                 {"new", {{"median", b.median}, {"min", b.min}, {"max", b.max}}},
                 {"ratio", a.median > 0 ? b.median / a.median : 0.0},
                 {"change", slower ? "slower" : "faster"},
                 {"spread_known", known},
                 {"regression", slower && known}});
  regressions += slower && known;
}

}  // namespace

ReportDiff diff_reports(const json& old_report, const json& new_report) {
  const auto o = cases_of(old_report, "old"), n = cases_of(new_report, "new");
  ReportDiff d;
  json& j = d.json;
  j = {{"old", {{"commit", old_report.value("commit", "")}, {"started", old_report.value("started", "")}}},
       {"new", {{"commit", new_report.value("commit", "")}, {"started", new_report.value("started", "")}}},
       {"status", json::array()},
       {"appeared", json::array()},
       {"vanished", json::array()},
       {"counters", json::array()},
       {"timing", json::array()}};
  for (const auto& [name, r] : o)
    if (!n.contains(name)) j["vanished"].push_back({{"case", name}, {"status", r.value("status", "")}});
  for (const auto& [name, r] : n) {
    auto it = o.find(name);
    if (it == o.end()) {
      j["appeared"].push_back({{"case", name}, {"status", r.value("status", "")}});
      continue;
    }
    const std::string os = it->second.value("status", ""), ns = r.value("status", "");
    if (os != ns) {
      const bool worse = rank(ns) > rank(os);
      json row = {{"case", name}, {"old", os}, {"new", ns}, {"regression", worse}};
      if (r.contains("failures") && !r["failures"].empty()) row["failure"] = r["failures"][0];
      j["status"].push_back(row);
      d.regressions += worse;
    }
    counters(name, it->second, r, j["counters"], d.regressions);
    timing(name, it->second, r, j["timing"], d.regressions);
  }
  j["regressions"] = d.regressions;
  return d;
}

std::string diff_markdown(const ReportDiff& d) {
  const json& j = d.json;
  std::string s = fmt::format("# jxlab diff\n\nold: {} ({}), new: {} ({}); **{} regression{}**\n",
                              j["old"]["commit"].get<std::string>(), j["old"]["started"].get<std::string>(),
                              j["new"]["commit"].get<std::string>(), j["new"]["started"].get<std::string>(),
                              d.regressions, d.regressions == 1 ? "" : "s");
  auto mark = [](const json& r) { return r.value("regression", false) ? " **regression**" : ""; };
  if (!j["status"].empty()) {
    s += "\n## Status\n\n| case | old | new | |\n|---|---|---|---|\n";
    for (const json& r : j["status"])
      s += fmt::format("| {} | {} | {} | {}{} |\n", r["case"].get<std::string>(), r["old"].get<std::string>(),
                       r["new"].get<std::string>(), r.value("failure", ""), mark(r));
  }
  for (const char* k : {"appeared", "vanished"}) {
    if (j[k].empty()) continue;
    s += fmt::format("\n## {}{}\n\n", static_cast<char>(std::toupper(k[0])), k + 1);
    for (const json& r : j[k])
      s += fmt::format("- {} ({})\n", r["case"].get<std::string>(), r["status"].get<std::string>());
  }
  if (!j["counters"].empty()) {
    s += "\n## Counters\n\n| case | point | counter | old | new | |\n|---|---|---|---|---|---|\n";
    for (const json& r : j["counters"])
      s += fmt::format("| {} | {} | {} | {} | {} |{} |\n", r["case"].get<std::string>(),
                       r.contains("point") ? r["point"].dump() : "", r["counter"].get<std::string>(), r["old"].dump(),
                       r["new"].dump(), mark(r));
  }
  if (!j["timing"].empty()) {
    s += "\n## Timing (beyond both runs' spread)\n\n| case | old median [min, max] s | new median [min, max] s | ratio "
         "| |\n|---|---|---|---|---|\n";
    for (const json& r : j["timing"])
      s += fmt::format("| {} | {:.4g} [{:.4g}, {:.4g}] | {:.4g} [{:.4g}, {:.4g}] | {:.2f}× {} | {}{} |\n",
                       r["case"].get<std::string>(), r["old"]["median"].get<double>(), r["old"]["min"].get<double>(),
                       r["old"]["max"].get<double>(), r["new"]["median"].get<double>(), r["new"]["min"].get<double>(),
                       r["new"]["max"].get<double>(), r["ratio"].get<double>(), r["change"].get<std::string>(),
                       r["spread_known"].get<bool>() ? "" : "no spread (use --repeat)", mark(r));
  }
  if (j["status"].empty() && j["appeared"].empty() && j["vanished"].empty() && j["counters"].empty() &&
      j["timing"].empty())
    s += "\nNo change.\n";
  return s;
}

}  // namespace jx::lab
