#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <cstdio>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <filesystem>
#include <fstream>

#include "core/backends/vulkan/vulkan.h"
#include "core/jx.h"
#include "cli/bench_scaling.h"
#include "cli/bisect.h"
#include "cli/check.h"
#include "cli/export.h"
#include "cli/diff.h"
#include "cli/reduce.h"
#include "cli/lab_commands.h"
#include "reports/soak.h"
#include "scenarios/scenario.h"
#include "workloads/dlm/dlm_io.h"
#include "workloads/dlm/dlm_stream.h"

namespace {

int cmd_devices() {
  fmt::print("{:<8} {:<10} {:<24} {}\n", "backend", "usable", "limits", "device");
  for (const auto& d : jx::devices()) {
    std::string limits =
        fmt::format("buffers/kernel={} f64={}",
                    d.limits.max_buffers_per_kernel ? std::to_string(d.limits.max_buffers_per_kernel) : "unlimited",
                    d.limits.float64 ? "yes" : "no");
    fmt::print("{:<8} {:<10} {:<24} {}\n", d.backend, d.available ? "yes" : "no", limits,
               d.available ? d.device : fmt::format("{} ({})", d.device, d.reason));
  }
  fmt::print("\nVulkan physical devices (JX_VULKAN_DEVICE=<index> selects; JX_LIMITS=webgpu|device):\n");
  for (const auto& line : jx::vulkan::describe_devices()) fmt::print("  {}\n", line);
  return 0;
}

struct DlmArgs {
  std::string in, out, algorithm = "scan", dtype = "f64", backend, optimizer = "newton", format;
  std::vector<double> s, w;
  std::int64_t horizon = -1;  // -1: the rows of X_forecast, else 12
  int order = -1;             // -1: from the file (default 1)
  int max_iter = 0;           // 0: the optimizer's default (newton 200, adam 2000)
  bool pretty = false, timings = false;
};

// Wall time of the phases of a `jxlab dlm` run, printed with --timings.
class Phases {
 public:
  void mark(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    marks_.emplace_back(name, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }
  std::string str() const {
    std::string s;
    double total = 0;
    for (const auto& [n, ms] : marks_) {
      s += fmt::format("{} {:.1f} ms, ", n, ms);
      total += ms;
    }
    return s + fmt::format("total {:.1f} ms", total);
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<const char*, double>> marks_;
};

// The backend: --backend, else JX_DEVICE, else native where it works (the generated C is what a
// fit wants; the cpu interpreter is the oracle), else cpu.
std::optional<jx::DefaultDeviceScope> dlm_backend(const std::string& name) {
  if (!name.empty()) return std::optional<jx::DefaultDeviceScope>(std::in_place, name);
  const char* env = std::getenv("JX_DEVICE");
  if (env && *env) return std::nullopt;
  try {
    jx::backend("native");
    return std::optional<jx::DefaultDeviceScope>(std::in_place, "native");
  } catch (const jx::BackendError&) {
    return std::nullopt;
  }
}

// A forecast holds h·(m² + m + 2) numbers, several times over (scan outputs, JSON text).
constexpr double kMaxForecastValues = 5e7;

// The input file with the command line's overrides (--s, --w, --order, --algorithm), validated.
jx::dlm::Input read_dlm_input(const DlmArgs& a) {
  jx::dlm::Input in = jx::dlm::read_input(a.in);
  if (!a.s.empty()) in.s = a.s;
  if (!a.w.empty()) in.w = a.w;
  if (a.order >= 0) in.options.order = a.order;
  in.options.algorithm = jx::dlm::parse_algorithm(a.algorithm);
  jx::dlm::validate(in, a.in);
  return in;
}

// A forecast's horizon (--h, else the rows of X_forecast, else 12) and the covariates' future
// values a model with covariates needs; refused where the forecast would not fit in memory.
std::int64_t forecast_horizon(const DlmArgs& a, const jx::dlm::Input& in, bool covariates,
                              std::optional<jx::Array>& X_future) {
  using namespace jx;
  const std::int64_t horizon = a.horizon >= 0           ? a.horizon
                               : !in.X_forecast.empty() ? static_cast<std::int64_t>(in.X_forecast.size())
                                                        : 12;
  if (covariates) {
    if (in.X_forecast.empty())
      throw Error(fmt::format(
          "{}: the model has {} covariates (X): the forecast needs their future values, field 'X_forecast' ({} rows)",
          a.in, in.X.front().size(), horizon));
    if (static_cast<std::int64_t>(in.X_forecast.size()) != horizon)
      throw Error(fmt::format("{}: field 'X_forecast' has {} rows; --h is {}", a.in, in.X_forecast.size(), horizon));
    X_future = dlm::matrix(in.X_forecast);
  }
  const double m = static_cast<double>(dlm::system_matrices(in.options).first.shape()[0] +
                                       (covariates ? static_cast<std::int64_t>(in.X.front().size()) : 0));
  const double values = static_cast<double>(horizon) * (m * m + m + 2);
  if (values > kMaxForecastValues)
    throw Error(fmt::format(
        "--h {}: the forecast would hold {:.3g} values ({} states); at most {:.0f} steps fit the limit of {:.0g}",
        horizon, values, m, std::floor(kMaxForecastValues / (m * m + m + 2)), kMaxForecastValues));
  return horizon;
}

// dlm mle: the fit at the estimates and an "mle" object (factors, −2 log L, iterations, history)
std::vector<jx::dlm::Field> run_mle(const DlmArgs& a, const jx::dlm::Input& in, const jx::Array& y, const jx::Array& s,
                                    const std::optional<jx::Array>& X) {
  using namespace jx;
  dlm::MleOptions mo;
  mo.optimizer = a.optimizer == "adam" ? dlm::MleOptions::Optimizer::adam : dlm::MleOptions::Optimizer::newton;
  if (a.optimizer == "adam") mo.max_iter = 2000;
  if (a.max_iter > 0) mo.max_iter = a.max_iter;
  mo.exact_hessian = a.optimizer != "newton-fd";
  dlm::Mle r = dlm::mle(y, s, in.w, in.options, mo, X);
  std::vector<dlm::Field> fields = dlm::fields(r.fit);
  fields.push_back(dlm::Field::json_object("mle", {{"obs_std_factor", r.obs_std_factor},
                                                   {"w", r.w},
                                                   {"lik", r.lik},
                                                   {"iterations", r.iterations},
                                                   {"converged", r.converged},
                                                   {"stop_reason", r.stop_reason},
                                                   {"history", r.history},
                                                   {"elapsed_ms", r.elapsed_ms},
                                                   {"compile_ms", r.compile_ms}}));
  fmt::print("-2 log L {:.6f} after {} iterations ({:.1f} ms, compile {:.1f} ms)\n", r.lik, r.iterations, r.elapsed_ms,
             r.compile_ms);
  if (!r.converged)
    fmt::print(stderr, "jxlab: warning: the {} optimizer did not converge: {}\n", a.optimizer, r.stop_reason);
  return fields;
}

int cmd_dlm(const std::string& verb, const DlmArgs& a) {
  using namespace jx;
  Phases phases;
  // every array of the run on one backend: the scope comes before the first array
  const std::optional<DefaultDeviceScope> scope = dlm_backend(a.backend);
  phases.mark("backend");
  const dlm::Input in = read_dlm_input(a);
  phases.mark("parse");
  std::optional<Array> X, X_future;
  if (!in.X.empty()) X = dlm::matrix(in.X);
  const std::int64_t horizon = verb == "forecast" ? forecast_horizon(a, in, X.has_value(), X_future) : 0;
  dlm::ResultWriter writer(a.out, dlm::output_format(a.format, a.out), a.pretty);
  const DType d = a.dtype == "f32" ? DType::float32 : DType::float64;
  Array y = np::array(in.y, std::nullopt, d);
  Array s = in.s.size() == 1 ? np::scalar(in.s[0], d) : np::array(in.s, std::nullopt, d);
  phases.mark("setup");
  std::vector<dlm::Field> fields;
  if (verb == "mle") {
    fields = run_mle(a, in, y, s, X);
  } else if (verb == "fit" && in.options.algorithm == dlm::Algorithm::scan) {
    // streamed: outputs go to the writer chunk by chunk (memory O(chunk) beyond the inputs). The
    // scans run on one core and a thread writes on the other: OpenMP's workers (for elementwise
    // kernels over one chunk) would only compete with the writer, and loading the OpenMP runtime
    // costs more than they save. A JX_NATIVE_OPENMP the user set stands.
    setenv("JX_NATIVE_OPENMP", "0", 0);
    dlm::StreamedFit f = dlm::fit_streamed(y, s, in.w, in.options, X, writer);
    fields = std::move(f.fields);
    fmt::print("-2 log L {:.6f}, s2 {:.6f}, nobs {}\n", f.lik, f.s2, f.nobs);
  } else {
    dlm::Fit f = dlm::fit(y, s, in.w, in.options, X);
    if (verb == "forecast")
      fields = dlm::fields(dlm::forecast(f, horizon, X_future));
    else
      fields = dlm::fields(f);
    if (verb == "fit") fmt::print("-2 log L {:.6f}, s2 {:.6f}, nobs {}\n", f.lik, f.s2, f.nobs);
  }
  phases.mark("compute");
  writer.commit(fields);
  phases.mark("write");
  if (a.timings) {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    fmt::print(stderr, "jxlab: {} ({} output bytes, peak RSS {:.1f} MB)\n", phases.str(), writer.bytes_written(),
               ru.ru_maxrss / 1024.0);
  }
  return 0;
}

// Every subcommand's options, bound by CLI11 until the command line is parsed; rc: the exit status
// the chosen command's callback sets.
struct Cli {
  int rc = 0;
  std::string command_line;  // argv joined, for reports' metadata
  std::string scenarios_dir = jx::lab::default_scenarios_dir();
  DlmArgs dlm;
  jx::lab::RunArgs run;
  jx::lab::CheckArgs check;
  std::vector<std::string> export_ids;
  bool export_all = false;
  std::string export_out = "exported";
  jx::lab::ReduceArgs reduce;
  std::string diff_old, diff_new, diff_out;
  bool diff_json = false;
  std::string bisect_id, bisect_backend;
  bool bisect_json = false;
  jx::lab::StressArgs stress;
  std::string replay_id, replay_backend;
  jx::lab::ScalingArgs scaling;
};

// dlm fit | mle | forecast
void add_dlm(CLI::App& app, Cli& cli) {
  auto* dlm = app.add_subcommand("dlm", "dynamic linear models: fit (filter + smoother), mle, forecast");
  dlm->require_subcommand(1);
  for (const char* verb : {"fit", "mle", "forecast"}) {
    auto* c = dlm->add_subcommand(verb, std::string("dlm ") + verb);
    c->add_option("--in", cli.dlm.in, "input: JSON {y, s, w, options} or CSV with one column of y")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--out", cli.dlm.out,
                  "output file: JSON in the toolbox's *-out-m.json layout (compact), or .npz (numpy's np.load)")
        ->required();
    c->add_option("--format", cli.dlm.format, "json or npz (default: from the --out name, .npz else json)")
        ->check(CLI::IsMember({"json", "npz"}));
    c->add_flag("--pretty", cli.dlm.pretty, "indent the output JSON");
    c->add_flag("--timings", cli.dlm.timings, "print the wall time of reading, computing and writing to stderr");
    c->add_option("--algorithm", cli.dlm.algorithm,
                  "filter/smoother: scan (sequential) or assoc (parallel, associative scans)")
        ->check(CLI::IsMember({"scan", "assoc"}));
    c->add_option("--dtype", cli.dlm.dtype, "f32 or f64")->check(CLI::IsMember({"f32", "f64"}));
    c->add_option("--backend", cli.dlm.backend, "backend (default: JX_DEVICE, else native where it works, else cpu)");
    c->add_option("--s", cli.dlm.s, "observation std (overrides the file; required for CSV input)");
    c->add_option("--w", cli.dlm.w, "process stds (overrides the file; required for CSV input)");
    c->add_option("--order", cli.dlm.order, "polynomial trend order (overrides options.order)")
        ->check(CLI::Range(0, 10));
    if (std::string(verb) == "forecast")
      c->add_option("--h", cli.dlm.horizon, "forecast horizon (default: the rows of X_forecast, else 12)")
          ->check(CLI::NonNegativeNumber);
    if (std::string(verb) == "mle") {
      c->add_option("--optimizer", cli.dlm.optimizer, "newton (exact Hessian), newton-fd, adam")
          ->check(CLI::IsMember({"newton", "newton-fd", "adam"}));
      c->add_option("--max-iter", cli.dlm.max_iter,
                    "iteration cap (default: newton 200, adam 2000); a run that reaches it warns")
          ->check(CLI::Range(1, 1000000));
    }
    c->callback([&cli, verb] { cli.rc = cmd_dlm(verb, cli.dlm); });
  }
}

// list, run: the scenarios
void add_list_run(CLI::App& app, Cli& cli) {
  auto* list = app.add_subcommand("list", "list the scenarios: id, backends, cases, title");
  list->add_option("--scenarios", cli.scenarios_dir, "directory of scenario files");
  list->callback([&cli] { cli.rc = jx::lab::cmd_list(cli.scenarios_dir); });
  auto* run = app.add_subcommand("run", "run scenarios: each case under its replay profile, expectations checked");
  run->add_option("ids", cli.run.ids, "scenario ids or globs, e.g. 'scan-dispatch-*' (jxlab list)");
  run->add_flag("--all", cli.run.all, "every scenario");
  run->add_option("--backend", cli.run.backends, "only these backends (cpu, native, vulkan; repeat or comma-separate)")
      ->delimiter(',');
  run->add_option("-k", cli.run.keyword, "only scenarios whose id or title contains this text");
  run->add_flag("--list", cli.run.list, "print the selected cases (scenario/backend/profile) and run nothing");
  run->add_flag("-x,--fail-fast", cli.run.fail_fast,
                "start no case after the first failed one (cases already running in other workers finish; -j 1 for a "
                "strict stop)");
  run->add_option(
         "--repeat", cli.run.repeat,
         "run every case N times: it fails if any round fails; report.json gives each case's median/min/max seconds")
      ->check(CLI::Range(1, 1000));
  run->add_option("--profile", cli.run.profile, "only the cases of this replay profile");
  run->add_option("--baseline", cli.run.baseline,
                  "a previous run's report folder: report.html shows the diff against it (jxlab diff)");
  run->add_option("--report", cli.run.report,
                  "write report.json, summary.md, junit.xml and report.html into this directory")
      ->check([](const std::string& s) { return s.empty() ? std::string("an empty path") : std::string(); });
  run->add_flag("--allow-skips", cli.run.allow_skips,
                "exit 0 when every case was skipped (default: exit 5, nothing ran)");
  run->add_option("--shard", cli.run.shard, "i/n: run every n-th scenario starting at the i-th");
  run->add_option("--scenarios", cli.run.scenarios,
                  "directory of scenario files (default: the source tree's scenarios/)");
  cli.run.jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  run->add_option("-j,--jobs", cli.run.jobs,
                  "cases run at once, each in its own worker process (default: the core count)")
      ->check(CLI::Range(1, 1024));
  run->add_option("--timeout", cli.run.timeout_s,
                  "seconds a case may run before its worker is killed (reported as timeout; a scenario's timeout_s "
                  "wins; default 120)")
      ->check(CLI::PositiveNumber);
  run->add_option("--memory-limit", cli.run.memory_limit_mb,
                  "MB of resident memory a worker may use before it is killed (reported as oom; default 8192; 0: none)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--point-calls", cli.run.point_calls,
                  "calls per sweep point for its timing: median/min/max in report.json (default 3; a point over 1 s is "
                  "called once)")
      ->check(CLI::Range(1, 100));
  run->add_flag("--in-process", cli.run.in_process,
                "run every case in this process, without workers or limits (for a debugger)");
  run->add_option("--worker-result", cli.run.worker_result,
                  "internal: run as a worker and write the case's result to this file")
      ->group("");
  run->add_option("--soak", cli.run.soak_minutes,
                  "MINUTES: repeat the chosen scenarios (at least 4 rounds); fail on any failure or growth trend")
      ->check(CLI::PositiveNumber);
  run->callback([&cli] {
    cli.run.command_line = cli.command_line;
    cli.rc = jx::lab::cmd_run(cli.run);
  });
}

// check: program case files on each backend; export: workloads as case files
void add_check_export(CLI::App& app, Cli& cli) {
  auto* check = app.add_subcommand(
      "check",
      "run program case files (JAX or jx jaxprs) on each backend; compare with their outputs and the cpu oracle");
  check
      ->add_option("files", cli.check.files,
                   "case files: .json {jaxpr, inputs, outputs?, rtol?, atol?} or bare .jaxpr text")
      ->required();
  check->add_option("--backend", cli.check.backend, "cpu, native, vulkan or all (default all)");
  check->add_option("--transform", cli.check.transform, "eager (default), jit, grad, jit(grad) or vmap");
  check->add_option("--out", cli.check.out, "write each run's outputs to DIR/<file stem>.<backend>.json");
  check
      ->add_option("--inputs", cli.check.inputs,
                   "inputs generated for files without any: normal (seeded, default), uniform, iota")
      ->check(CLI::IsMember({"normal", "uniform", "iota"}));
  check->callback([&cli] { cli.rc = jx::lab::cmd_check(cli.check); });
  auto* ex = app.add_subcommand(
      "export", "write scenarios' compiled-in workloads as program case files (jaxpr, inputs, cpu outputs)");
  ex->add_option("ids", cli.export_ids, "scenario ids");
  ex->add_flag("--all", cli.export_all,
               "every scenario with a compiled-in workload (those that cannot be traced are skipped)");
  ex->add_option("--out", cli.export_out, "output folder (default ./exported)");
  ex->add_option("--scenarios", cli.scenarios_dir, "directory of scenario files");
  ex->callback(
      [&cli] { cli.rc = jx::lab::cmd_export(cli.export_ids, cli.export_all, cli.scenarios_dir, cli.export_out); });
}

// reduce, diff, bisect: a failing case, two reports, a profile's switches
void add_reduce_diff_bisect(CLI::App& app, Cli& cli) {
  cli.reduce.scenarios = cli.scenarios_dir;
  auto* re = app.add_subcommand("reduce",
                                "shrink a failing scenario case to the smallest program that still fails the same way");
  re->add_option("case", cli.reduce.target, "scenario id, scenario file or program case file (.jaxpr or .json)")
      ->required();
  re->add_option("--out", cli.reduce.out, "folder for the reduced scenario and its program")->required();
  re->add_option("--backend", cli.reduce.backend, "backend (default: the scenario's first)");
  re->add_option("--profile", cli.reduce.profile,
                 "the case's replay profile (default: its first case that expects an error)");
  re->add_option("--transform", cli.reduce.transform, "transform to start from (default: the scenario's)");
  re->add_option("--max-seconds", cli.reduce.max_seconds, "time bound (default 120)")->check(CLI::PositiveNumber);
  re->add_option(
        "--rtol", cli.reduce.rtol,
        "a mismatch's relative tolerance against the cpu oracle (default 1e-3 for float32 outputs, 1e-8 for float64)")
      ->check(CLI::NonNegativeNumber);
  re->add_option("--atol", cli.reduce.atol,
                 "a mismatch's absolute tolerance (default 1e-4 for float32 outputs, 1e-10 for float64)")
      ->check(CLI::NonNegativeNumber);
  re->add_option("--scenarios", cli.reduce.scenarios, "directory of scenario files");
  re->callback([&cli] { cli.rc = jx::lab::cmd_reduce(cli.reduce); });
  auto* di = app.add_subcommand("diff",
                                "compare two runs' reports: status changes, new and vanished cases, counters, timing "
                                "beyond the spread; exit 1 on a regression");
  di->add_option("old", cli.diff_old, "the baseline: a report folder or its report.json")->required();
  di->add_option("new", cli.diff_new, "the run to judge: a report folder or its report.json")->required();
  di->add_flag("--json", cli.diff_json, "JSON instead of Markdown");
  di->add_option("--out", cli.diff_out, "also write the text to this file");
  di->callback([&cli] { cli.rc = jx::lab::cmd_diff(cli.diff_old, cli.diff_new, cli.diff_json, cli.diff_out); });
  auto* bi = app.add_subcommand("bisect",
                                "the smallest set of replay switches behind each profile's failure of a scenario, and "
                                "the version where it stops");
  bi->add_option("id", cli.bisect_id, "scenario id (e.g. buffer-limit-kalman)")->required();
  bi->add_option("--backend", cli.bisect_backend, "backend (default: the scenario's first)");
  bi->add_flag("--json", cli.bisect_json, "print JSON instead of the table");
  bi->add_option("--scenarios", cli.scenarios_dir, "directory of scenario files");
  bi->callback(
      [&cli] { cli.rc = jx::lab::cmd_bisect(cli.bisect_id, cli.scenarios_dir, cli.bisect_backend, cli.bisect_json); });
}

// stress jit; replay: a scenario under every profile
void add_stress_replay(CLI::App& app, Cli& cli) {
  auto* stress = app.add_subcommand("stress", "stress runs");
  stress->require_subcommand(1);
  auto* sj = stress->add_subcommand(
      "jit", "many jit calls over varying shapes in one process: results, slots, caches and RSS bounded");
  sj->add_option("--calls", cli.stress.calls, "jit calls (default 10000)")->check(CLI::PositiveNumber);
  sj->add_option("--shapes", cli.stress.shapes, "distinct input shapes (default 2500; each seen calls/shapes times)")
      ->check(CLI::PositiveNumber);
  sj->add_option("--backend", cli.stress.backend, "backend (default cpu)");
  sj->add_option("--out", cli.stress.out, "write the figures as JSON to this file");
  sj->callback([&cli] { cli.rc = jx::lab::cmd_stress_jit(cli.stress); });
  auto* rp = app.add_subcommand(
      "replay", "outcome table of a scenario's workload under every replay profile and both gradient transforms");
  rp->add_option("id", cli.replay_id, "scenario id (e.g. buffer-limit)")->required();
  rp->add_option("--backend", cli.replay_backend, "backend (default: the scenario's first)");
  rp->add_option("--scenarios", cli.scenarios_dir, "directory of scenario files");
  rp->callback([&cli] { cli.rc = jx::lab::cmd_replay(cli.replay_id, cli.scenarios_dir, cli.replay_backend); });
}

// bench scaling
void add_bench(CLI::App& app, Cli& cli) {
  auto* bench = app.add_subcommand("bench", "benchmark sweeps");
  bench->require_subcommand(1);
  auto* scaling = bench->add_subcommand(
      "scaling", "scan-dispatch cases A-D over N: time and dispatches per call, CSV/JSON + gnuplot PNG/SVG");
  scaling->add_option("--backend", cli.scaling.backend, "backend (default vulkan)");
  scaling->add_option("--n", cli.scaling.n, "LO:HI, sizes LO, 2 LO, ... up to HI (default 100:102400)");
  scaling->add_option("--out", cli.scaling.out, "output directory (default build/scaling)");
  scaling->add_option("--reps", cli.scaling.reps, "timed calls per point (median; default 3)")
      ->check(CLI::Range(1, 100));
  scaling->add_option(
      "--profile", cli.scaling.profiles,
      "replay profiles to sweep side by side (default current; e.g. --profile current --profile no-workgroup-fusion)");
  scaling->callback([&cli] {
    cli.scaling.command_line = cli.command_line;  // for its results' metadata
    cli.rc = jx::lab::cmd_bench_scaling(cli.scaling);
  });
}

// Parses and runs; usage errors exit 2, runtime errors 1, with one line on stderr.
int parse_and_run(CLI::App& app, const Cli& cli, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the message (or the help)
    return code == 0 ? 0 : 2;      // a usage error
  } catch (const jx::lab::UsageError& e) {
    fmt::print(stderr, "jxlab: {}\n", e.what());
    return 2;
  } catch (const jx::Error& e) {
    fmt::print(stderr, "jxlab: {}\n", e.what());
    return 1;
  } catch (const jx::lab::ScenarioError& e) {
    fmt::print(stderr, "jxlab: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "jxlab: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "jxlab: {}\n", e.what());
    return 1;
  }
  return cli.rc;
}

}  // namespace

int main(int argc, char** argv) {
  jx::ShutdownAtExit vulkan_teardown;
  CLI::App app{"jxlab: a reproduction lab for array/autodiff/JIT runtimes"};
  app.set_version_flag("--version", fmt::format("jxlab {}", jx::kVersion));
  app.require_subcommand(1);
  int debug = 0;
  app.add_option("--debug", debug, "debug level: 1 compiles and scan paths, 2 generated code, 3 kernels, 4 programs")
      ->check(CLI::Range(0, 4));
  // --debug overrides JX_DEBUG (which the library reads at start); without it JX_DEBUG stands
  app.parse_complete_callback([&] {
    if (app.count("--debug")) jx::set_debug(debug);
  });
  Cli cli;
  for (int i = 0; i < argc; ++i) cli.command_line += (i ? " " : "") + std::string(argv[i]);
  auto* devices = app.add_subcommand("devices", "list backends: device, usability and key limits");
  devices->callback([&cli] { cli.rc = cmd_devices(); });
  add_dlm(app, cli);
  add_list_run(app, cli);
  add_check_export(app, cli);
  add_reduce_diff_bisect(app, cli);
  add_stress_replay(app, cli);
  add_bench(app, cli);
  return parse_and_run(app, cli, argc, argv);
}
