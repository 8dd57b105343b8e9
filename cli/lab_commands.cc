// `jxlab list` and `jxlab run`: the lab's main job.
#include "cli/lab_commands.h"

#include <chrono>
#include <ctime>
#include <fmt/color.h>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <map>
#include <fnmatch.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <unistd.h>

#include "cli/run_context.h"
#include "cli/workers.h"
#include "core/jx.h"
#include "reports/report.h"
#include "reports/soak.h"
#include "scenarios/runner.h"

#ifndef JX_GIT_COMMIT
#define JX_GIT_COMMIT "unknown"
#endif

namespace jx::lab {
namespace {

// --repeat: rounds 2..n of the same selection merged into the first round's results: a case
// fails (with its failures) if any round failed; its seconds are the median, and report.json
// holds every round's seconds with median, min and max.
// Each sweep point's seconds likewise (points[i].seconds_rounds).

std::vector<double> point_seconds(const CaseResult& r) {
  std::vector<double> s;
  if (r.measured.contains("points"))
    for (const auto& p : r.measured["points"]) s.push_back(p.value("seconds", 0.0));
  return s;
}

template <class Round>
std::vector<CaseResult> repeated(std::vector<CaseResult> first, int n, Round&& round) {
  std::map<std::string, std::vector<double>> secs;
  std::map<std::string, std::vector<std::vector<double>>> points;  // per case, per point: the rounds
  auto add = [&](const CaseResult& r) {
    secs[r.name()].push_back(r.seconds);
    const auto ps = point_seconds(r);
    auto& per = points[r.name()];
    per.resize(std::max(per.size(), ps.size()));
    for (std::size_t i = 0; i < ps.size(); ++i) per[i].push_back(ps[i]);
  };
  for (const auto& r : first) add(r);
  for (int k = 1; k < n; ++k)
    for (const auto& r : round())
      for (auto& f : first)
        if (f.name() == r.name()) {
          add(r);
          if (r.status == "fail" && f.status != "fail") f.status = "fail", f.failures = r.failures;
          if (r.status == "fail") f.failures.push_back(fmt::format("failed in round {} of {}", k + 1, n));
        }
  for (auto& f : first) {
    f.measured["seconds_rounds"] = seconds_spread(secs[f.name()]);
    f.seconds = f.measured["seconds_rounds"]["median"];
    const auto& per = points[f.name()];
    for (std::size_t i = 0; f.measured.contains("points") && i < per.size() && i < f.measured["points"].size(); ++i)
      if (!per[i].empty()) {
        f.measured["points"][i]["seconds_rounds"] = seconds_spread(per[i]);
        f.measured["points"][i]["seconds"] = f.measured["points"][i]["seconds_rounds"]["median"];
      }
  }
  return first;
}

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

std::pair<int, int> parse_shard(const std::string& s) {
  int i = 0, n = 0;
  char slash = 0;
  if (std::sscanf(s.c_str(), "%d%c%d", &i, &slash, &n) != 3 || slash != '/' || n < 1 || i < 1 || i > n)
    throw UsageError(fmt::format("--shard '{}': expected i/n with 1 <= i <= n", s));
  if (std::to_string(i) + "/" + std::to_string(n) != s)
    throw UsageError(fmt::format("--shard '{}': expected i/n, two whole numbers", s));
  return {i, n};
}

}  // namespace

std::string default_scenarios_dir() {
  if (const char* e = std::getenv("JX_SCENARIOS")) return e;
  return std::string(JX_SOURCE_DIR) + "/scenarios";
}

int cmd_list(const std::string& dir) {
  const auto all = load_scenarios(dir);
  fmt::print("{:<22} {:<22} {:<10} {}\n", "id", "backends", "cases", "title");
  for (const auto& s : all) {
    std::string b, c;
    for (const auto& x : s.backends) b += (b.empty() ? "" : ",") + x;
    for (const auto& x : s.cases) c += (c.empty() ? "" : ",") + x.profile;
    fmt::print("{:<22} {:<22} {:<10} {}\n", s.id, b, s.cases.size(), s.title);
    fmt::print("{:<22} profiles: {}\n", "", c);
  }
  return 0;
}

namespace {

// One cell of the replay table: the values (and the widest dispatch), or the error, with the
// values when they were computed before it.
std::string outcome_cell(const CaseResult& r) {
  if (r.status == "skipped") return "skipped: " + r.skip_reason;
  const auto& pt = r.measured["points"][0];
  std::string values;
  for (const auto& [k, v] : pt["values"].items())
    values += fmt::format("{}{} {:.10g}", values.empty() ? "" : ", ", k, v.empty() ? NAN : v[0].get<double>());
  // workloads that record memory per call (memory-growth): RSS and jit-cache entries at call 1,
  // at call 20 (past the warm-up) and at the last
  if (pt.contains("series") && pt["series"].contains("rss_kb") && pt["series"].contains("cache_entries") &&
      !pt["series"]["rss_kb"].empty()) {
    const auto& rss = pt["series"]["rss_kb"];
    const auto& ent = pt["series"]["cache_entries"];
    const std::size_t n = rss.size(), k = std::min<std::size_t>(19, n - 1);
    const double growth = (rss[n - 1].get<double>() - rss[k].get<double>()) / rss[k].get<double>() * 100.0;
    values += fmt::format(
        "{}RSS {:.0f} / {:.0f} / {:.0f} KB at calls 1 / {} / {} ({:+.1f}% since call {}), jit cache entries {:.0f} / "
        "{:.0f} / {:.0f}",
        values.empty() ? "" : "; ", rss[0].get<double>(), rss[k].get<double>(), rss[n - 1].get<double>(), k + 1, n,
        growth, k + 1, ent[0].get<double>(), ent[k].get<double>(), ent[n - 1].get<double>());
  }
  if (!pt.contains("error"))
    return fmt::format("{}; max {} buffers/dispatch", values, pt["max_buffers_per_dispatch"].get<int>());
  const std::string err =
      fmt::format("{}: {}", pt["error"]["type"].get<std::string>(), pt["error"]["message"].get<std::string>());
  return pt["error"]["values_before"].get<bool>() ? fmt::format("computes {}, then {}", values, err) : err;
}

}  // namespace

int cmd_replay(const std::string& id, const std::string& dir, const std::string& backend_name) {
  const auto all = load_scenarios(dir);
  auto it = std::find_if(all.begin(), all.end(), [&](const Scenario& s) { return s.id == id; });
  if (it == all.end())
    throw Error(fmt::format("jxlab replay: no scenario '{}' in {} (jxlab list shows them)", id, dir));
  Scenario s = *it;
  if (!backend_name.empty()) s.backends = {backend_name};
  s.backends.resize(1);
  const std::vector<std::string> transforms{"jit(value_and_grad)", "value_and_grad"};
  // With a documented version table: its rows (historical profiles) then `current`, each of our
  // cells beside the documented one (null row: `current`, the fix); without: every named profile.
  const bool history = !s.history.empty();
  std::vector<std::pair<std::string, const HistoryRow*>> rows;
  for (const auto& h : s.history) rows.emplace_back(h.profile, &h);
  if (history)
    rows.emplace_back("current", nullptr);
  else
    for (const auto& prof : replay::profiles())
      if (!prof.historical) rows.emplace_back(prof.name, nullptr);
  // the header waits for the first cell: a workload that runs only eager or jit has no gradient
  // transforms to replay, and says so instead of a table of errors
  bool header = false;
  auto print_header = [&] {
    fmt::print("{} on {} ({}); source: {}\n\n| profile | switches |", s.id, s.backends[0], s.workload, s.source);
    for (const auto& t : transforms)
      fmt::print(fmt::runtime(history ? " {} (ours) | {} (documented) |" : " {} |"), t, t);
    fmt::print("\n|---|---|{}\n", history ? "---|---|---|---|" : "---|---|");
    header = true;
  };
  for (const auto& [name, doc_row] : rows) {
    const replay::Profile& prof = replay::profile(name);
    std::string row = fmt::format("| {} | {} |", prof.name, prof.policy.key().empty() ? "-" : prof.policy.key());
    for (const auto& t : transforms) {
      Scenario one = s;
      one.transform = t;
      one.cases = {Case{prof.name, Expect{}, {}}};
      const CaseResult r = run_scenario(one, {"", "", 1}).at(0);  // outcomes only: one call per point
      if (!header) {
        if (r.status != "skipped" && r.measured["points"][0].contains("error") &&
            r.measured["points"][0]["error"]["type"] == "UnsupportedTransform")
          throw UsageError(
              fmt::format("jxlab replay: scenario '{}' (workload {}) does not run under the gradient transforms: {}",
                          s.id, s.workload, r.measured["points"][0]["error"]["message"].get<std::string>()));
        print_header();
      }
      row += " " + outcome_cell(r) + " |";
      if (!history) continue;
      std::string doc = doc_row ? "(not documented)" : "(the fix)";
      if (doc_row)
        for (const auto& [tr, text] : doc_row->documented)
          if (tr == t) doc = text;
      row += " " + doc + " |";
    }
    fmt::print("{}\n", row);
  }
  return 0;
}

namespace {

void check_args(const RunArgs& a) {
  if (!a.report.empty()) prepare_report_dir(a.report);  // before any work: an unwritable directory fails now
  if (!a.baseline.empty()) {                            // likewise a baseline that is no report
    if (a.report.empty()) throw UsageError("--baseline needs --report (the diff is shown in report.html)");
    try {
      (void)read_baseline(a.baseline);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (!a.all && a.ids.empty()) throw UsageError("jxlab run: name scenario ids or pass --all (jxlab list shows them)");
  if (a.all && !a.ids.empty()) throw UsageError("jxlab run: --all and scenario ids exclude each other");
  if (!a.profile.empty()) try {
      (void)replay::profile(a.profile);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  for (const auto& b : a.backends)
    if (b != "cpu" && b != "native" && b != "vulkan")
      throw UsageError(fmt::format("--backend '{}': expected cpu, native or vulkan", b));
}

// Ids or globs (fnmatch: * ? [...]) over the scenarios' ids, in the order named.
std::vector<Scenario> by_ids(const RunArgs& a, const std::vector<Scenario>& all, const std::string& dir) {
  if (a.all) return all;
  std::vector<Scenario> chosen;
  for (const auto& id : a.ids) {
    bool any = false;
    for (const auto& s : all)
      if (fnmatch(id.c_str(), s.id.c_str(), 0) == 0 &&
          std::none_of(chosen.begin(), chosen.end(), [&](const Scenario& c) { return c.id == s.id; }))
        chosen.push_back(s), any = true;
    if (!any && std::none_of(chosen.begin(), chosen.end(),
                             [&](const Scenario& c) { return fnmatch(id.c_str(), c.id.c_str(), 0) == 0; }))
      throw UsageError(fmt::format("jxlab run: no scenario {}'{}' in {} (jxlab list shows them)",
                                   id.find_first_of("*?[") == std::string::npos ? "" : "matches ", id, dir));
  }
  return chosen;
}

// The selection: ids or --all, then -k, --backend, and the shard (--shard, else GoogleTest's
// sharding variables, as a CI matrix sets them).
std::vector<Scenario> select_scenarios(const RunArgs& a, const std::string& dir) {
  std::vector<Scenario> chosen = by_ids(a, load_scenarios(dir), dir);
  if (!a.keyword.empty())  // -k, as pytest's: a substring of the id or the title
    std::erase_if(chosen, [&](const Scenario& s) {
      return s.id.find(a.keyword) == std::string::npos && s.title.find(a.keyword) == std::string::npos;
    });
  if (!a.backends.empty()) {  // only the named backends of each scenario
    for (Scenario& s : chosen)
      std::erase_if(s.backends, [&](const std::string& b) {
        return std::find(a.backends.begin(), a.backends.end(), b) == a.backends.end();
      });
    std::erase_if(chosen, [](const Scenario& s) { return s.backends.empty(); });
  }
  if (!a.worker_result.empty()) return chosen;  // a worker runs the case it was given
  std::string shard = a.shard;
  const char* shards = std::getenv("GTEST_TOTAL_SHARDS");
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  if (shard.empty() && shards && *shards && index && *index) {
    char* end = nullptr;
    const long k = std::strtol(index, &end, 10);
    if (*end != 0 || k < 0)
      throw UsageError(fmt::format("GTEST_SHARD_INDEX='{}': expected a whole number from 0", index));
    shard = fmt::format("{}/{}", k + 1, shards);
  }
  if (shard.empty()) return chosen;
  auto [i, n] = parse_shard(shard);
  std::vector<Scenario> mine;
  for (std::size_t k = 0; k < chosen.size(); ++k)
    if (static_cast<int>(k % static_cast<std::size_t>(n)) == i - 1) mine.push_back(chosen[k]);
  return mine;
}

// A worker (jxlab run ID --backend B --profile P --worker-result FILE, started by the runner):
// the one case, in this process, its result as JSON in FILE.
int worker(const RunArgs& a, const std::vector<Scenario>& chosen, const std::string& profile) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : chosen)
    for (const auto& r : run_scenario(s, {a.backends.empty() ? "" : a.backends[0], profile, a.point_calls}))
      out.push_back(case_json(r));
  // written and renamed here, not through the reports' writer (whose report_write_stall fault
  // point belongs to the runner's reports)
  const std::string tmp = a.worker_result + ".tmp";
  std::ofstream(tmp) << out.dump();
  if (std::rename(tmp.c_str(), a.worker_result.c_str()) != 0)
    throw Error(fmt::format("cannot write {}", a.worker_result));
  return 0;
}

// --in-process (and soaks, which watch this process's memory across rounds): every case in
// this process, a scenario at a time.
std::vector<CaseResult> run_in_process(const std::vector<Scenario>& chosen, const std::string& profile, bool fail_fast,
                                       int point_calls, const std::function<void(const CaseResult&)>& row) {
  std::vector<CaseResult> results;
  for (const auto& s : chosen) {
    if (g_interrupted) break;
    auto rs = run_scenario(s, {"", profile, point_calls});
    if (row)
      for (const auto& r : rs) row(r);
    results.insert(results.end(), rs.begin(), rs.end());
    if (fail_fast && std::any_of(rs.begin(), rs.end(), [](const CaseResult& r) { return r.status == "fail"; })) break;
  }
  return results;
}

std::vector<WorkUnit> units_of(const std::vector<Scenario>& chosen, const std::string& profile, double timeout_s) {
  std::vector<WorkUnit> u;
  for (const auto& s : chosen)
    for (const auto& c : s.cases)
      if (profile.empty() || c.profile == profile)
        for (const auto& b : s.backends) u.push_back({&s, b, c.profile, s.timeout_s.value_or(timeout_s)});
  return u;
}

// The summary line, the reports and the exit code (pytest's).
int finish(const RunArgs& a, const std::vector<CaseResult>& results, ReportMeta& meta,
           std::chrono::steady_clock::time_point t0) {
  meta.interrupted = g_interrupted != 0;
  meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int pass = 0, fail = 0, skip = 0, errors = 0;
  for (const auto& r : results) {
    pass += r.status == "pass", fail += r.status == "fail", skip += r.status == "skipped";
    errors += r.status == "crash" || r.status == "timeout" || r.status == "oom";
  }
  fmt::print("{} passed, {} failed, {}{} skipped in {:.1f} s{}\n", pass, fail,
             errors ? fmt::format("{} errors (crash, timeout, oom), ", errors) : "", skip, meta.seconds,
             meta.interrupted ? " (interrupted)" : "");
  if (!a.report.empty()) {
    write_reports(a.report, results, meta);
    fmt::print("reports: {}/report.json, summary.md, junit.xml, report.html\n", a.report);
  }
  if (meta.interrupted) return 130;  // as a shell reports SIGINT
  if (fail || errors) return 1;
  if (pass == 0 && (skip == 0 || !a.allow_skips)) {
    fmt::print(stderr, "jxlab run: no case ran ({})\n",
               results.empty() ? "the selection is empty" : "every case was skipped; --allow-skips accepts that");
    return kExitNothingRan;
  }
  return 0;
}

}  // namespace

int cmd_run(const RunArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  ReportMeta meta{
      fmt::format("jxlab {}", kVersion), JX_GIT_COMMIT, machine(), now_utc(), 0, false, nlohmann::json::object(), ""};
  check_args(a);
  // a soak judges the runtime as it is: replay profiles re-create defects (memory growth among
  // them) and run in a soak only when asked for with --profile
  const std::string profile = a.soak_minutes > 0 && a.profile.empty() ? "current" : a.profile;
  const std::string dir = a.scenarios.empty() ? default_scenarios_dir() : a.scenarios;
  const std::vector<Scenario> chosen = select_scenarios(a, dir);
  if (!a.worker_result.empty()) return worker(a, chosen, profile);
  const std::vector<WorkUnit> units = units_of(chosen, profile, a.timeout_s);
  if (a.list) {  // a dry run: what would run, in order
    for (const auto& u : units) fmt::print("{}/{}/{}\n", u.scenario->id, u.backend, u.profile);
    fmt::print("{} cases\n", units.size());
    return units.empty() ? kExitNothingRan : 0;
  }
  const bool tty = isatty(fileno(stdout)) != 0;
  const char* no_color = std::getenv("NO_COLOR");  // no-color.org: set and not empty
  const bool colour = tty && !(no_color && *no_color);
  // rows stream as each case finishes (flushed, piped or not); SIGINT/SIGTERM: nothing new
  // starts, running workers are stopped, the reports hold the finished cases and say so
  auto print_row = [&](const CaseResult& r) {
    if (tty) fmt::print(stderr, "\r\033[K");
    const auto c = r.status == "pass"      ? fmt::color::green
                   : r.status == "skipped" ? fmt::color::yellow
                                           : fmt::color::red;
    const std::string status = colour ? fmt::format(fg(c), "{:<8}", r.status) : fmt::format("{:<8}", r.status);
    fmt::print("{:<20} {:<8} {:<24} {} {:>8.2f}\n", r.scenario, r.backend, r.profile, status, r.seconds);
    for (const auto& f : r.failures) fmt::print("    {}\n", f);
    if (r.status == "skipped") fmt::print("    skipped: {}\n", r.skip_reason);
    std::fflush(stdout);
  };
  std::size_t done = 0;
  auto run_round = [&] {
    done = 0;
    if (a.in_process || a.soak_minutes > 0)
      return run_in_process(chosen, profile, a.fail_fast, a.soak_minutes > 0 ? 1 : a.point_calls,
                            a.soak_minutes <= 0 ? std::function<void(const CaseResult&)>(print_row) : nullptr);
    WorkerOptions o{a.jobs,  a.memory_limit_mb, dir,         [] { return g_interrupted != 0; },
                    nullptr, nullptr,           a.fail_fast, a.point_calls};
    o.finished = [&](const CaseResult& r) {
      ++done;
      if (a.soak_minutes <= 0) print_row(r);
    };
    o.running = [&](const std::vector<std::string>& names) {
      if (tty) fmt::print(stderr, "\r\033[K[{}/{}] {}", done, units.size(), fmt::join(names, ", "));
    };
    return run_isolated(units, o);
  };
  meta.context = run_context(a.command_line);
  meta.baseline = a.baseline;
  if (const std::string c = short_commit(meta.context); !c.empty())
    meta.commit = c;  // the commit now, not at configure time
  g_interrupted = 0;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (a.soak_minutes > 0)
    return soak(a.soak_minutes, a.report, run_round,
                {{"version", meta.version},
                 {"commit", meta.commit},
                 {"machine", meta.machine},
                 {"started", meta.started},
                 {"context", meta.context}});
  fmt::print("{:<20} {:<8} {:<24} {:<8} {:>8}\n", "scenario", "backend", "profile", "result", "seconds");
  std::fflush(stdout);
  std::vector<CaseResult> results = run_round();
  if (a.repeat > 1) results = repeated(results, a.repeat, run_round);
  return finish(a, results, meta, t0);
}

}  // namespace jx::lab
