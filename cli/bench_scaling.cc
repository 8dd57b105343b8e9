// `jxlab bench scaling`: the scan-dispatch cases A-D swept over N on one backend: wall time per
// call (median of the timed calls after a warm-up) and dispatches per call, written as CSV and
// JSON, plotted by gnuplot (PNG + SVG, log-log, one line per case with its scan path).
#include "cli/bench_scaling.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/backends/vulkan/vulkan.h"
#include "cli/lab_commands.h"
#include "cli/run_context.h"
#include "core/jx.h"
#include "reports/report.h"
#include "repros/repro.h"
#include "scanpath/scan_path_tracker.h"

namespace jx::lab {
namespace {

struct ScalingRow {
  std::string profile, c, path;
  std::int64_t n;
  double ms, ms_min, ms_max;  // median, min and max of the timed calls
  std::int64_t dispatches;
  std::string label() const { return profile + " " + c + ":" + path; }
};

std::vector<std::int64_t> sizes(const std::string& spec) {
  std::int64_t lo = 0, hi = 0;
  char colon = 0;
  if (std::sscanf(spec.c_str(), "%ld%c%ld", &lo, &colon, &hi) != 3 || colon != ':' || lo < 1 || hi < lo)
    throw UsageError(
        fmt::format("--n '{}': expected LO:HI with 1 <= LO <= HI (sizes LO, 2 LO, 4 LO, ... up to HI)", spec));
  std::vector<std::int64_t> v;
  for (std::int64_t n = lo; n <= hi; n *= 2) v.push_back(n);
  return v;
}

ScalingRow measure(const std::string& backend_name, const std::string& c, std::int64_t n, int reps) {
  const bool vk = backend_name == "vulkan";
  auto once = [&](bool count) {
    Run r;
    r.backend = backend_name;
    r.params = {{"case", c}, {"n", n}, {"dtype", "float32"}};
    r.transform = c == "B" || c == "D" ? "jit" : "eager";  // B, D: jit(A), jit(C)
    std::optional<trace::DispatchTracker> t;
    std::optional<ScanPathTracker> paths;
    std::chrono::steady_clock::time_point t0;
    r.on_measure = [&] {
      if (vk) {
        vulkan::synchronize();
        vulkan::reset_counters();
      }
      t.emplace();
      paths.emplace();
      t0 = std::chrono::steady_clock::now();
    };
    repro("scan_dispatch").fn(r);  // records the outputs: the host reads them, so the GPU work is done
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ScalingRow row{"", c, "", n, ms, ms, ms, 0};
    if (count) {
      row.dispatches =
          vk ? static_cast<std::int64_t>(vulkan::counters().dispatches) : static_cast<std::int64_t>(t->dispatches());
      auto p = paths->paths();
      row.path = p.empty() ? "assoc" : std::string(scan_path_name(p.front()));
    }
    return row;
  };
  (void)once(false);  // compile
  std::vector<double> ms;
  ScalingRow row = once(true);
  ms.push_back(row.ms);
  for (int i = 1; i < reps; ++i) ms.push_back(once(false).ms);
  std::sort(ms.begin(), ms.end());
  row.ms = ms[ms.size() / 2], row.ms_min = ms.front(), row.ms_max = ms.back();
  return row;
}

// gnuplot data: one block per case:path (blank-line separated, selected with `index`).
// gnuplot scaling.gp inside `dir`, from argv (no shell), stderr into dir/gnuplot.log: the script
// names its files relative to dir, so no path reaches a shell or a gnuplot string.
bool run_gnuplot(const std::string& dir) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    const int log = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) dup2(log, 2);
    execlp("gnuplot", "gnuplot", "scaling.gp", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A gnuplot single-quoted string: quotes doubled, backquotes and control characters dropped (no
// command substitution, one line).
std::string gp_quoted(const std::string& t) {
  std::string q = "'";
  for (char ch : t) {
    if (ch == '\'')
      q += "''";
    else if (ch != '`' && static_cast<unsigned char>(ch) >= 0x20)
      q += ch;
  }
  return q + "'";
}

// Lines as one gnuplot double-quoted string ("\n" between them): backslashes and quotes escaped,
// backquotes, at signs and control characters dropped.
std::string gp_lines(const std::vector<std::string>& lines) {
  std::string q = "\"";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) q += "\\n";
    for (char ch : lines[i]) {
      if (ch == '\\' || ch == '"')
        q += '\\', q += ch;
      else if (ch != '`' && ch != '@' && static_cast<unsigned char>(ch) >= 0x20)
        q += ch;
    }
  }
  return q + "\"";
}

// Data: one block per (profile, case, path), blank-line separated and selected with `index`, so
// no line joins points of two series; columns N, median, min, max ms, dispatches.
std::vector<std::string> write_data(const std::string& dir, const std::vector<ScalingRow>& rows) {
  std::vector<std::string> labels;
  for (const ScalingRow& r : rows)
    if (std::find(labels.begin(), labels.end(), r.label()) == labels.end()) labels.push_back(r.label());
  std::string dat;
  for (const auto& l : labels) {
    dat += "# " + l + "\n";
    for (const ScalingRow& r : rows)
      if (r.label() == l)
        dat += fmt::format("{} {:.6f} {:.6f} {:.6f} {}\n", r.n, r.ms, r.ms_min, r.ms_max, r.dispatches);
    dat += "\n\n";
  }
  write_atomically(dir + "/scaling.dat", dat);
  return labels;
}

// Log-log, axes fitted to the data (no empty decades), the legend outside the plot area, the
// run's metadata under the title; time as median with min-max bars.
void plot(const std::string& dir, const std::string& backend, const std::vector<ScalingRow>& rows,
          const nlohmann::json& meta) {
  const auto labels = write_data(dir, rows);
  std::vector<std::int64_t> ns;  // the swept sizes, as the x tics
  for (const ScalingRow& r : rows)
    if (std::find(ns.begin(), ns.end(), r.n) == ns.end()) ns.push_back(r.n);
  const std::string title = fmt::format("scan-dispatch cases on {} ({})", backend, meta.value("device", ""));
  const std::string stamp = fmt::format("{}, {}, {}; {} timed calls per point", meta.value("commit", ""),
                                        meta.value("started", ""), meta.value("machine", ""), meta.value("reps", 0));
  for (const char* term : {"png", "svg"}) {
    std::string gp = fmt::format(
        "set terminal {} size 1400,{}\nset output 'scaling.{}'\nset logscale xy\nset autoscale xfix\nset autoscale "
        "yfix\n"
        "set offsets graph 0.03, graph 0.03, graph 0.08, graph 0.08\n"
        "set key outside below center horizontal maxcols 2 width -2 samplen 2 font ',10' noenhanced\nset xtics ({}) "
        "format '%g'\n"
        "set grid\nset multiplot layout 1,2 title {} noenhanced\n"
        "set xlabel 'N'\nset ylabel 'ms per call (median, min-max)'\n",
        term, 580 + 18 * ((labels.size() + 1) / 2), term, fmt::join(ns, ", "), gp_lines({title, stamp}));
    auto lines = [&](const std::string& using_cols, const char* style) {
      std::string s = "plot ";
      for (std::size_t i = 0; i < labels.size(); ++i)
        s += fmt::format("{}'scaling.dat' index {} using {} with {} lc {} title {}", i ? ", " : "", i, using_cols,
                         style, i + 1, gp_quoted(labels[i]));
      return s + "\n";
    };
    gp += lines("1:2:3:4", "yerrorlines");
    gp += "set ylabel 'dispatches per call'\n" + lines("1:5", "linespoints") + "unset multiplot\n";
    const std::string script = dir + "/scaling.gp";
    write_atomically(script, gp);
    if (!run_gnuplot(dir))
      throw Error(fmt::format("gnuplot failed on {} (see {}/gnuplot.log; install gnuplot-nox)", script, dir));
  }
}

}  // namespace

int cmd_bench_scaling(const ScalingArgs& a) {
  prepare_report_dir(a.out);
  (void)backend(a.backend);  // unavailable: BackendError with the reason, before any work
  DefaultDeviceScope scope(a.backend);
  nlohmann::json meta = {{"started", now_utc()},
                         {"machine", machine()},
                         {"backend", a.backend},
                         {"device", backend(a.backend).info().device},
                         {"reps", a.reps},
                         {"profiles", a.profiles},
                         {"context", run_context(a.command_line)}};
  meta["commit"] = short_commit(meta["context"]);
  std::vector<ScalingRow> rows;
  const std::vector<std::string> cases{"A", "B", "C", "D"};
  for (const auto& prof : a.profiles) {
    replay::Scope policy(replay::profile(prof).policy);
    for (std::int64_t n : sizes(a.n))
      for (const auto& c : cases) {
        rows.push_back(measure(a.backend, c, n, a.reps));
        ScalingRow& r = rows.back();
        r.profile = prof;
        fmt::print("{:<20} case {} N={:<7} {:>10.3f} ms [{:.3f}, {:.3f}] {:>7} dispatches  {}\n", prof, r.c, r.n, r.ms,
                   r.ms_min, r.ms_max, r.dispatches, r.path);
        std::fflush(stdout);
      }
  }
  std::string csv = "profile,case,path,n,ms_median,ms_min,ms_max,dispatches\n";
  nlohmann::json j = meta;
  j["rows"] = nlohmann::json::array();
  for (const ScalingRow& r : rows) {
    csv += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{}\n", r.profile, r.c, r.path, r.n, r.ms, r.ms_min, r.ms_max,
                       r.dispatches);
    j["rows"].push_back({{"profile", r.profile},
                         {"case", r.c},
                         {"path", r.path},
                         {"n", r.n},
                         {"ms", r.ms},
                         {"ms_min", r.ms_min},
                         {"ms_max", r.ms_max},
                         {"dispatches", r.dispatches}});
  }
  write_atomically(a.out + "/scaling.csv", csv);
  write_atomically(a.out + "/scaling.json", j.dump(2) + "\n");
  plot(a.out, a.backend, rows, meta);
  fmt::print("wrote {0}/scaling.csv, scaling.json, scaling.png, scaling.svg\n", a.out);
  return 0;
}

}  // namespace jx::lab
