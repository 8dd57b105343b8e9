#include "scenarios/runner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <regex>

#include "core/backends/vulkan/vulkan.h"
#include "repros/program.h"
#include "core/jx.h"
#include "repros/repro.h"
#include "scanpath/scan_path_tracker.h"

namespace jx::lab {
namespace {

using json = nlohmann::json;

// What one call of the workload did.
struct Point {
  json param;  // the sweep value (null without a sweep)
  Run run;
  bool failed = false;
  std::string error_type, error_message;
  bool values_before = false;
  std::vector<std::string> paths;
  std::int64_t dispatches = 0, submits = -1, host_routines = -1, leaked = 0;
  int max_buffers = 0;
  double seconds = 0;  // the measured part (from the workload's measure() mark, else its start) to the device's idle
  std::vector<double> rounds;  // every call's seconds when the point was timed more than once
};

template <class F>
void classify(Point& p, F&& f) {
  try {
    f();
  } catch (const UseAfterDispose& e) {
    p.error_type = "UseAfterDispose", p.error_message = e.what();
  } catch (const UnsupportedTransform& e) {
    p.error_type = "UnsupportedTransform", p.error_message = e.what();
  } catch (const NonlinearError& e) {
    p.error_type = "NonlinearError", p.error_message = e.what();
  } catch (const ScanPathError& e) {
    p.error_type = "ScanPathError", p.error_message = e.what();
  } catch (const BackendError& e) {
    p.error_type = "BackendError", p.error_message = e.what();
  } catch (const ShapeError& e) {
    p.error_type = "ShapeError", p.error_message = e.what();
  } catch (const TracerError& e) {
    p.error_type = "TracerError", p.error_message = e.what();
  } catch (const Error& e) {
    p.error_type = "Error", p.error_message = e.what();
  } catch (const std::exception& e) {
    p.error_type = "std::exception", p.error_message = e.what();
  }
  p.failed = !p.error_type.empty();
}

Point call(const Scenario& s, const std::string& backend, const json& param) {
  Point p;
  p.param = param;
  p.run.backend = backend;
  p.run.transform = s.transform;
  p.run.params = s.params;
  if (!s.sweep_key.empty()) p.run.params[s.sweep_key] = param;
  const bool vk = backend == "vulkan";
  clear_caches();  // every call starts cold: cached programs hold slots and would read as leaks
  const std::size_t slots0 = slot_count();
  {
    ScanPathTracker paths;
    std::optional<trace::DispatchTracker> tracker(std::in_place);
    if (vk) vulkan::reset_counters();
    auto t0 = std::chrono::steady_clock::now();
    p.run.on_measure = [&] {
      if (vk) {
        vulkan::synchronize();
        vulkan::reset_counters();
      }
      tracker.emplace();
      t0 = std::chrono::steady_clock::now();
    };
    classify(p, [&] {
      if (s.program.empty())
        repro(s.workload).fn(p.run);
      else
        program_workload(p.run, s.program, s.program_inputs);
    });
    const trace::DispatchTracker& dispatches = *tracker;
    if (vk) {
      if (!p.failed)
        classify(p, [&] { vulkan::synchronize(); });
      else
        try {
          vulkan::synchronize();
        } catch (const Error&) {  // the workload's own failure is the one reported
        }
      const auto c = vulkan::counters();
      p.dispatches = static_cast<std::int64_t>(c.dispatches);
      p.submits = static_cast<std::int64_t>(c.submits);
      p.host_routines = static_cast<std::int64_t>(c.host_routines);
      p.max_buffers = static_cast<int>(
          std::max<std::uint64_t>(c.max_buffers_per_dispatch, static_cast<std::uint64_t>(dispatches.max_buffers())));
    } else {
      p.dispatches = static_cast<std::int64_t>(dispatches.dispatches());
      p.max_buffers = dispatches.max_buffers();
    }
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (ScanPath sp : paths.paths()) p.paths.emplace_back(scan_path_name(sp));
  }
  p.values_before = !p.run.values.empty();
  clear_caches();
  p.leaked = static_cast<std::int64_t>(slot_count()) - static_cast<std::int64_t>(slots0);
  return p;
}

json point_json(const Point& p) {
  json j = {{"seconds", p.seconds},     {"dispatches", p.dispatches}, {"max_buffers_per_dispatch", p.max_buffers},
            {"leaked_slots", p.leaked}, {"scan_paths", p.paths},      {"values", p.run.values},
            {"metrics", p.run.metrics}};
  if (!p.param.is_null()) j["param"] = p.param;
  if (p.submits >= 0) j["submits"] = p.submits;
  if (p.host_routines >= 0) j["host_routines"] = p.host_routines;
  if (p.rounds.size() > 1) j["seconds_rounds"] = seconds_spread(p.rounds);
  if (p.failed) j["error"] = {{"type", p.error_type}, {"message", p.error_message}, {"values_before", p.values_before}};
  for (const auto& [k, v] : p.run.series) j["series"][k] = v;
  return j;
}

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

void check_values(const std::string& name, const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  double atol, std::vector<std::string>& fails) {
  if (got.size() != want.size()) {
    fails.push_back(fmt::format("values '{}': {} elements, expected {}", name, got.size(), want.size()));
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!close(got[i], want[i], rtol, atol)) {
      fails.push_back(fmt::format("values '{}'[{}] = {:.10g}, expected {:.10g} (rtol {}, atol {})", name, i, got[i],
                                  want[i], rtol, atol));
      return;
    }
}

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t r = 0;
  while ((std::int64_t{1} << r) < n) ++r;
  return r;
}

void check_count(const char* what, const CountExpect& c, const std::vector<Point>& pts, bool vulkan_only,
                 std::vector<std::string>& fails) {
  std::vector<double> xs, ys;
  for (const Point& p : pts) {
    const std::int64_t v = std::string(what) == "submits" ? p.submits : p.dispatches;
    if (vulkan_only && v < 0) {
      fails.push_back(fmt::format("{}: counted only on vulkan", what));
      return;
    }
    const std::string at = p.param.is_null() ? "" : fmt::format(" at {}", p.param.dump());
    if (c.exactly && v != *c.exactly)
      fails.push_back(fmt::format("{}{}: {}, expected exactly {}", what, at, v, *c.exactly));
    if (c.max && v > *c.max) fails.push_back(fmt::format("{}{}: {}, expected at most {}", what, at, v, *c.max));
    if (c.growth == "log2") {
      const std::int64_t n = p.param.is_number_integer() ? p.param.get<std::int64_t>() : 0;
      if (v > ceil_log2(n) + c.log2_plus)
        fails.push_back(fmt::format("{}{}: {}, expected at most ceil(log2 {}) + {} = {}", what, at, v, n, c.log2_plus,
                                    ceil_log2(n) + c.log2_plus));
    }
    xs.push_back(p.param.is_number() ? p.param.get<double>() : 0.0);
    ys.push_back(static_cast<double>(v));
  }
  if (c.growth == "constant" && !ys.empty() && std::any_of(ys.begin(), ys.end(), [&](double y) { return y != ys[0]; }))
    fails.push_back(fmt::format("{}: {} over the sweep, expected constant", what, fmt::join(ys, ", ")));
  if (c.growth == "linear" && ys.size() >= 2) {
    // least squares y = a x + b; linear: a > 0, R² >= 0.99, and y grows at least half as fast as x
    const double n = static_cast<double>(xs.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      sx += xs[i], sy += ys[i], sxx += xs[i] * xs[i], sxy += xs[i] * ys[i], syy += ys[i] * ys[i];
    }
    const double a = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const double r2 = std::pow(n * sxy - sx * sy, 2) / ((n * sxx - sx * sx) * (n * syy - sy * sy));
    const double ratio = (ys.back() / std::max(ys.front(), 1.0)) / (xs.back() / xs.front());
    if (!(a > 0 && r2 >= 0.99 && ratio >= 0.5))
      fails.push_back(fmt::format("{}: {} over {}: slope {:.3g}, R² {:.4f}, expected linear growth", what,
                                  fmt::join(ys, ", "), fmt::join(xs, ", "), a, r2));
  }
}

// The cpu oracle's values for `vs: cpu` (same workload, current policy).
std::map<std::string, std::vector<double>> oracle(const Scenario& s, const json& param) {
  replay::Scope current(replay::Policy{});
  DefaultDeviceScope cpu("cpu");
  Point p = call(s, "cpu", param);
  if (p.failed) throw Error(fmt::format("the cpu oracle failed: {}: {}", p.error_type, p.error_message));
  return p.run.values;
}

// The point's values against the file's or the cpu oracle's: the outputs named in `differ` must
// differ beyond rtol/atol (a documented wrong answer), the others agree.
void check_point_values(const Scenario& s, const ValuesExpect& v, const Point& p, const std::string& at,
                        std::vector<std::string>& fails) {
  std::map<std::string, std::vector<double>> want;
  try {
    if (v.vs == "file")
      for (auto it = v.expected.begin(); it != v.expected.end(); ++it) want[it.key()] = it->get<std::vector<double>>();
    else
      want = oracle(s, p.param);
  } catch (const std::exception& e) {
    fails.push_back(e.what());
    return;
  }
  for (const std::string& d : v.differ)
    if (!want.contains(d))
      fails.push_back(fmt::format("values '{}'{}: no such output in the reference (differ names it)", d, at));
  for (const auto& [name, w] : want) {
    auto got = p.run.values.find(name);
    if (got == p.run.values.end()) {
      fails.push_back(fmt::format("values '{}'{}: not computed", name, at));
      continue;
    }
    std::vector<std::string> mism;
    check_values(name, got->second, w, v.rtol, v.atol, mism);
    const bool must_differ = std::find(v.differ.begin(), v.differ.end(), name) != v.differ.end();
    if (!must_differ)
      fails.insert(fails.end(), mism.begin(), mism.end());
    else if (mism.empty())
      fails.push_back(
          fmt::format("values '{}'{} agree with the {} within rtol {}, atol {}; expected them to differ (a documented "
                      "wrong answer)",
                      name, at, v.vs == "file" ? "file" : "cpu oracle", v.rtol, v.atol));
  }
}

void check_memory(const MemoryExpect& m, const Point& p, std::vector<std::string>& fails) {
  auto it = p.run.series.find("rss_kb");
  auto ie = p.run.series.find("cache_entries");
  if (it == p.run.series.end() || ie == p.run.series.end()) {
    fails.push_back("memory: the workload records no per-call rss_kb/cache_entries series");
    return;
  }
  const auto& rss = it->second;
  const auto& ent = ie->second;
  const std::size_t k = static_cast<std::size_t>(std::max<std::int64_t>(m.after_call, 1)) - 1;
  if (rss.size() <= k) {
    fails.push_back(fmt::format("memory: {} calls, fewer than after_call {}", rss.size(), m.after_call));
    return;
  }
  const double pct = (rss.back() - rss[k]) / rss[k] * 100.0;
  if (m.rss_growth_pct_max && pct > *m.rss_growth_pct_max)
    fails.push_back(fmt::format("memory: RSS grew {:.1f}% from call {} to {} ({:.0f} -> {:.0f} KB), expected < {}%",
                                pct, k + 1, rss.size(), rss[k], rss.back(), *m.rss_growth_pct_max));
  if (m.rss_growth_pct_min && pct < *m.rss_growth_pct_min)
    fails.push_back(fmt::format("memory: RSS grew {:.1f}% from call {} to {}, expected >= {}%", pct, k + 1, rss.size(),
                                *m.rss_growth_pct_min));
  const double cap = p.run.metrics.count("cache_capacity") ? p.run.metrics.at("cache_capacity") : 0;
  if (m.cache_within_capacity && *m.cache_within_capacity)
    for (std::size_t i = 0; i < ent.size(); ++i)
      if (ent[i] > cap) {
        fails.push_back(
            fmt::format("memory: {} jit cache entries at call {}, over the capacity {}", ent[i], i + 1, cap));
        break;
      }
  if (m.cache_entries_grow && *m.cache_entries_grow && !(ent.back() > ent[k]))
    fails.push_back(fmt::format("memory: jit cache entries {} at call {} and {} at the last, expected growth", ent[k],
                                k + 1, ent.back()));
}

}  // namespace

replay::Policy policy_of(const std::string& profile) {
  if (profile.rfind(kSwitchesPrefix, 0) != 0) return replay::profile(profile).policy;
  replay::Policy p;
  std::string rest = profile.substr(std::string(kSwitchesPrefix).size());
  for (std::size_t at = 0; at < rest.size();) {
    const std::size_t comma = std::min(rest.find(',', at), rest.size());
    p = replay::with_switch(p, rest.substr(at, comma - at), true);
    at = comma + 1;
  }
  return p;
}

namespace {

// A point: the call, then (when it passed and took under a second) more calls for its timing,
// the median its seconds.
Point timed_call(const Scenario& s, const std::string& backend_name, const json& param, int calls) {
  Point p = call(s, backend_name, param);
  p.rounds = {p.seconds};
  for (int k = 1; k < calls && !p.failed && p.rounds.front() < 1.0; ++k) {
    const Point q = call(s, backend_name, param);
    if (q.failed) break;
    p.rounds.push_back(q.seconds);
  }
  p.seconds = seconds_spread(p.rounds)["median"];
  return p;
}

// The error expectation against point p. Returns whether the point's other checks apply: not
// where it succeeded against an expected error, nor where it failed unexpectedly.
bool check_point_error(const Expect& x, const Point& p, const std::string& at, std::vector<std::string>& fails) {
  if (!x.error) {
    if (p.failed) fails.push_back(fmt::format("unexpected {}{}: {}", p.error_type, at, p.error_message));
    return !p.failed;
  }
  const ErrorExpect& e = *x.error;
  if (!p.failed) {
    fails.push_back(fmt::format("expected {} matching /{}/{}, but the workload succeeded",
                                e.type.empty() ? "an error" : e.type, e.message, at));
    return false;
  }
  if (!e.type.empty() && p.error_type != e.type)
    fails.push_back(fmt::format("error type {}{}, expected {} ({})", p.error_type, at, e.type, p.error_message));
  if (!std::regex_search(p.error_message, std::regex(e.message)))
    fails.push_back(fmt::format("error message \"{}\"{} does not match /{}/", p.error_message, at, e.message));
  if (e.values_before && *e.values_before != p.values_before)
    fails.push_back(fmt::format("values were{} computed before the error{}, expected{}", p.values_before ? "" : " not",
                                at, *e.values_before ? "" : " not"));
  return true;
}

// Every scan of point p took one of the expected paths, and at least one ran.
void check_scan_paths(const std::vector<std::string>& want, const Point& p, const std::string& at,
                      std::vector<std::string>& fails) {
  if (p.paths.empty())
    fails.push_back(fmt::format("scan paths{}: no scan ran, expected [{}]", at, fmt::join(want, ", ")));
  for (const auto& sp : p.paths)
    if (std::find(want.begin(), want.end(), sp) == want.end()) {
      fails.push_back(fmt::format("a scan took path {}{}, expected one of [{}]", sp, at, fmt::join(want, ", ")));
      break;
    }
}

// The expectations that hold at each point of a sweep (dispatch and submit counts are checked
// over the whole sweep).
void check_point(const Scenario& s, const Expect& x, const Point& p, std::vector<std::string>& fails) {
  const std::string at = p.param.is_null() ? "" : fmt::format(" at {}={}", s.sweep_key, p.param.dump());
  if (!check_point_error(x, p, at, fails)) return;
  if (x.values && !p.failed) check_point_values(s, *x.values, p, at, fails);
  if (!x.scan_paths.empty()) check_scan_paths(x.scan_paths, p, at, fails);
  if (x.max_buffers_per_dispatch && p.max_buffers > *x.max_buffers_per_dispatch)
    fails.push_back(fmt::format("{} buffers in one dispatch{}, expected at most {}", p.max_buffers, at,
                                *x.max_buffers_per_dispatch));
  if (x.host_routines && p.host_routines < 0)
    fails.push_back(fmt::format("host routines{}: counted only on vulkan", at));
  else if (x.host_routines && p.host_routines > *x.host_routines)
    fails.push_back(
        fmt::format("{} primitives ran on the host{}, expected at most {}", p.host_routines, at, *x.host_routines));
  if (x.leaked_slots && p.leaked != *x.leaked_slots)
    fails.push_back(fmt::format("{} leaked slots{}, expected {}", p.leaked, at, *x.leaked_slots));
  if (x.memory) check_memory(*x.memory, p, fails);
}

CaseResult run_case(const Scenario& s, const Case& c, const std::string& backend_name, int calls) {
  if (c.profile.rfind(kSwitchesPrefix, 0) != 0) (void)replay::profile(c.profile);  // an unknown name fails here
  CaseResult r{s.id, s.title, s.file, backend_name, c.profile, "pass", {}, "", json::object(), 0, c.expect_json};
  try {
    (void)backend(backend_name);
  } catch (const BackendError& e) {
    r.status = "skipped";
    r.skip_reason = e.what();
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Expect& x = c.expect;
  std::vector<Point> pts;
  try {
    replay::Scope policy(policy_of(c.profile));
    DefaultDeviceScope device(backend_name);
    const std::string prev_limits = backend_name == "vulkan" ? vulkan::limits() : "";
    if (backend_name == "vulkan") vulkan::set_limits(s.limits);
    if (s.sweep_values.empty()) pts.push_back(timed_call(s, backend_name, nullptr, calls));
    for (const json& v : s.sweep_values) pts.push_back(timed_call(s, backend_name, v, calls));
    if (backend_name == "vulkan") vulkan::set_limits(prev_limits);
  } catch (const BackendError& e) {
    // the backend died around the workload (a lost Vulkan device): this case fails with the
    // reason; later cases on it are skipped by the availability check above, others run on
    r.status = "fail";
    r.backend_lost = true;
    r.failures.push_back(fmt::format("the {} backend failed: {}", backend_name, e.what()));
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  for (const Point& p : pts) check_point(s, x, p, r.failures);
  if (x.dispatches) check_count("dispatches", *x.dispatches, pts, false, r.failures);
  if (x.submits) check_count("submits", *x.submits, pts, true, r.failures);
  r.status = r.failures.empty() ? "pass" : "fail";
  for (const Point& p : pts) r.measured["points"].push_back(point_json(p));
  r.measured["policy"] = policy_of(c.profile).switches();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.measured["seconds"] = r.seconds;
  return r;
}

}  // namespace

json seconds_spread(const std::vector<double>& rounds) {
  auto v = rounds;
  std::sort(v.begin(), v.end());
  return {{"rounds", rounds}, {"median", v[v.size() / 2]}, {"min", v.front()}, {"max", v.back()}};
}

json case_json(const CaseResult& r) {
  json j = {{"scenario", r.scenario}, {"title", r.title},   {"file", r.file},         {"backend", r.backend},
            {"profile", r.profile},   {"status", r.status}, {"failures", r.failures}, {"skip_reason", r.skip_reason},
            {"seconds", r.seconds},   {"expect", r.expect}, {"measured", r.measured}};
  if (r.backend_lost) j["backend_lost"] = true;
  return j;
}

CaseResult case_from_json(const json& j) {
  CaseResult r;
  r.scenario = j.value("scenario", ""), r.title = j.value("title", ""), r.file = j.value("file", "");
  r.backend = j.value("backend", ""), r.profile = j.value("profile", ""), r.status = j.value("status", "");
  r.failures = j.value("failures", std::vector<std::string>{});
  r.skip_reason = j.value("skip_reason", "");
  r.seconds = j.value("seconds", 0.0);
  r.expect = j.value("expect", json::object());
  r.measured = j.value("measured", json::object());
  r.backend_lost = j.value("backend_lost", false);
  return r;
}

std::vector<CaseResult> run_scenario(const Scenario& s, const RunOptions& o,
                                     const std::function<void(const std::string&)>& progress) {
  std::vector<CaseResult> out;
  for (const Case& c : s.cases) {
    if (!o.profile.empty() && c.profile != o.profile) continue;
    for (const std::string& b : s.backends) {
      if (!o.backend.empty() && b != o.backend) continue;
      if (progress) progress(s.id + "/" + b + "/" + c.profile);
      out.push_back(run_case(s, c, b, o.point_calls));
    }
  }
  return out;
}

}  // namespace jx::lab
