#include "reports/report.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>
#include <unistd.h>

#include "core/base/errors.h"
#include "core/instrument/faults.h"
#include "reports/diff.h"
#include "reports/html.h"

namespace jx::lab {
namespace {

// Text for XML 1.0 attributes and content: markup characters as entities; characters XML 1.0
// forbids (controls other than tab, newline and return) as "\xNN"; bytes that are not UTF-8 as
// U+FFFD. A JUnit consumer's XML parser accepts every message this way.
std::string xml_escape(const std::string& s) {
  std::string o;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\t':
        case '\n':
        case '\r': o += static_cast<char>(c); break;
        default: o += c < 0x20 ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // a UTF-8 sequence: lead byte, continuation bytes, no overlong form, no surrogate, <= U+10FFFF
    const int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    std::uint32_t cp = len == 4 ? c & 0x07u : len == 3 ? c & 0x0Fu : c & 0x1Fu;
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    ok = ok && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)) &&
         !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
    if (ok) {
      o.append(s, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      o += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return o;
}
std::string md_escape(std::string s) {
  for (std::size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
  return s;
}

}  // namespace

void prepare_report_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("report directory {}: cannot create it: {}", dir, ec.message()));
  const std::string probe = (fs::path(dir) / fmt::format(".jxlab-write-test-{}", getpid())).string();
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw Error(fmt::format("report directory {}: not writable", dir));
  std::fclose(f);
  fs::remove(probe, ec);
  // a report set whose renames a killed run left half done: finish them (see write_reports)
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".report-set-", 0) != 0 || name.find(".tmp-") != std::string::npos) continue;
    const std::string pid = name.substr(12);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // still running
    for (const char* f : {"report.json", "summary.md", "junit.xml", "report.html"}) {
      const fs::path tmp = fs::path(dir) / fmt::format("{}.tmp-{}", f, pid);
      if (fs::exists(tmp)) fs::rename(tmp, fs::path(dir) / f, ec);
    }
    fs::remove(e.path(), ec);
  }
  // temporary files of runs killed while writing (NAME.tmp-PID whose process is gone)
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto at = name.rfind(".tmp-");
    if (at == std::string::npos) continue;
    const std::string pid = name.substr(at + 5);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove(e.path(), ec);
  }
}

nlohmann::json read_baseline(const std::string& path) {
  std::filesystem::path p = path;
  if (std::filesystem::is_directory(p)) p /= "report.json";
  std::ifstream in(p);
  if (!in) throw Error(fmt::format("baseline {}: cannot read it (a report folder or its report.json)", p.string()));
  nlohmann::json b = nlohmann::json::parse(in, nullptr, false);
  if (b.is_discarded() || !b.is_object() || !b.contains("results"))
    throw Error(fmt::format("baseline {}: not a lab report.json", p.string()));
  return b;
}

static nlohmann::json baseline_diff(const std::string& path, const nlohmann::json& now) {
  if (path.empty()) return nullptr;
  return diff_reports(read_baseline(path), now).json;
}

// Writes content to PATH.tmp-PID in full (or throws) and returns that name.
std::string write_temporary(const std::string& path, const std::string& content) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(fmt::format("cannot write {}", tmp));
    if (faults::fire("report_write_stall")) {  // test switch: stop half-written, to be killed
      f.write(content.data(), static_cast<std::streamsize>(content.size() / 2));
      f.flush();
      std::this_thread::sleep_for(std::chrono::seconds(60));
      f.write(content.data() + content.size() / 2, static_cast<std::streamsize>(content.size() - content.size() / 2));
    } else {
      f << content;
    }
    f.flush();
    if (!f) throw Error(fmt::format("cannot write {}", tmp));
  }
  return tmp;
}

void write_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = write_temporary(path, content);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot rename {} to {}", tmp, path));
  }
}

// A case that did not run to its verdict: its worker crashed, ran out of time or of memory (JUnit
// calls these errors, beside the failures of cases that ran).
static bool is_error(const std::string& status) { return status == "crash" || status == "timeout" || status == "oom"; }

std::string markdown_summary(const std::vector<CaseResult>& results, const ReportMeta& meta) {
  std::map<std::string, int> n;
  for (const auto& r : results) n[is_error(r.status) ? "error" : r.status]++;
  std::string s = fmt::format(
      "# jxlab run{}\n\n{} · commit {} · {} · started {} · {:.1f} s\n\n**{} passed, {} failed, {} errors (crash, "
      "timeout, oom), {} skipped**\n\n",
      meta.interrupted ? " (interrupted: the finished cases only)" : "", meta.version, meta.commit, meta.machine,
      meta.started, meta.seconds, n["pass"], n["fail"], n["error"], n["skipped"]);
  if (!meta.context.empty()) {
    s += "| context | |\n|---|---|\n";
    for (auto it = meta.context.begin(); it != meta.context.end(); ++it)
      s += fmt::format("| {} | {} |\n", it.key(),
                       md_escape(it.value().is_string() ? it.value().get<std::string>() : it.value().dump()));
    s += "\n";
  }
  s += "| scenario | backend | profile | result | seconds | details |\n|---|---|---|---|---|---|\n";
  for (const auto& r : results) {
    std::string details = r.status == "skipped" ? r.skip_reason : "";
    for (const auto& f : r.failures) details += (details.empty() ? "" : "; ") + f;
    s += fmt::format("| {} | {} | {} | {} | {:.2f} | {} |\n", r.scenario, r.backend, r.profile, r.status, r.seconds,
                     md_escape(details));
  }
  return s;
}

std::string junit_xml(const std::vector<CaseResult>& results, const ReportMeta& meta) {
  std::map<std::string, std::vector<const CaseResult*>> by;
  for (const auto& r : results) by[r.scenario].push_back(&r);
  int fails = 0, skips = 0, errors = 0;
  for (const auto& r : results)
    fails += r.status == "fail", skips += r.status == "skipped", errors += is_error(r.status);
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"jxlab\" tests=\"{}\" failures=\"{}\" "
      "skipped=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
      results.size() + meta.interrupted, fails, skips, errors + (meta.interrupted ? 1 : 0), meta.seconds);
  // the run's context as JUnit properties, and an interrupted run as an error, in a suite of its own
  s += fmt::format(
      "  <testsuite name=\"jxlab run\" tests=\"{}\" failures=\"0\" errors=\"{}\" skipped=\"0\" time=\"0\">\n    "
      "<properties>\n",
      meta.interrupted ? 1 : 0, meta.interrupted ? 1 : 0);
  s += fmt::format("      <property name=\"version\" value=\"{}\"/>\n      <property name=\"started\" value=\"{}\"/>\n",
                   xml_escape(meta.version), xml_escape(meta.started));
  for (auto it = meta.context.begin(); it != meta.context.end(); ++it)
    s += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(it.key()),
                     xml_escape(it.value().is_string() ? it.value().get<std::string>() : it.value().dump()));
  s += "    </properties>\n";
  if (meta.interrupted)
    s += "    <testcase name=\"interrupted\" classname=\"jxlab\"><error message=\"the run was interrupted "
         "(SIGINT/SIGTERM); the finished cases only\"/></testcase>\n";
  s += "  </testsuite>\n";
  for (const auto& [id, rs] : by) {
    int f = 0, k = 0, e = 0;
    double t = 0;
    for (const auto* r : rs)
      f += r->status == "fail", k += r->status == "skipped", e += is_error(r->status), t += r->seconds;
    s += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
        xml_escape(id), rs.size(), f, e, k, t);
    for (const auto* r : rs) {
      s += fmt::format("    <testcase classname=\"{}\" name=\"{}/{}\" time=\"{:.3f}\"", xml_escape(id),
                       xml_escape(r->backend), xml_escape(r->profile), r->seconds);
      if (r->status == "pass") {
        s += "/>\n";
        continue;
      }
      s += ">\n";
      if (r->status == "skipped") s += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(r->skip_reason));
      for (const auto& m : r->failures)
        s += fmt::format("      <{} message=\"{}\"/>\n", is_error(r->status) ? "error" : "failure", xml_escape(m));
      s += "    </testcase>\n";
    }
    s += "  </testsuite>\n";
  }
  return s + "</testsuites>\n";
}

void write_reports(const std::string& dir, const std::vector<CaseResult>& results, const ReportMeta& meta) {
  nlohmann::json j = {{"version", meta.version}, {"commit", meta.commit},   {"machine", meta.machine},
                      {"started", meta.started}, {"seconds", meta.seconds}, {"interrupted", meta.interrupted},
                      {"context", meta.context}};
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) {
    j["results"].push_back(case_json(r));
  }
  const auto path = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  // The three files replace the previous set together: every one written in full first, then a
  // marker naming the set, then the renames. A run killed before the marker leaves the previous
  // set untouched (its temporaries are removed by the next run); one killed during the renames
  // leaves the marker, and the next run finishes them before anything else (prepare_report_dir).
  const std::vector<std::pair<std::string, std::string>> set{
      {path("report.json"), j.dump(2) + "\n"},
      {path("summary.md"), markdown_summary(results, meta)},
      {path("junit.xml"), junit_xml(results, meta)},
      {path("report.html"), html_report(j, baseline_diff(meta.baseline, j))}};
  std::vector<std::string> tmps;
  for (const auto& [p, content] : set) tmps.push_back(write_temporary(p, content));
  const std::string marker = path(fmt::format(".report-set-{}", getpid()).c_str());
  write_atomically(marker, "report.json summary.md junit.xml report.html\n");
  for (std::size_t i = 0; i < set.size(); ++i)
    if (std::rename(tmps[i].c_str(), set[i].first.c_str()) != 0)
      throw Error(fmt::format("cannot rename {} to {}", tmps[i], set[i].first));
  std::remove(marker.c_str());
}

}  // namespace jx::lab
