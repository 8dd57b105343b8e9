// The whole `jxlab dlm fit` process, end to end (issue 33 item 4): start, read, fit (scan, two
// passes, filter and smoother), write; the native cache warm (one run before timing). Inputs are
// a local-level-and-slope series of N rows as CSV or JSON; outputs compact JSON or .npz.
// Counters: the child's peak RSS (wait4), output bytes, and the ratio to dlm-js's 262 ms for the
// same fit at N = 102400 (measured on this 2-core machine by the issue, node + wasm backend).
// Run with --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true for the median
// of interleaved rounds with min and max. JXLAB names the binary (default: ../jxlab beside this one).
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
constexpr double kDlmJsMs = 262.0;  // dlm-js dlmFit, N = 102400, this machine (issue 33)

std::string jxlab_path() {
  if (const char* p = std::getenv("JXLAB")) return p;
  return (fs::canonical("/proc/self/exe").parent_path().parent_path() / "jxlab").string();
}

const fs::path& work_dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("jx-bench-cli-" + std::to_string(getpid()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// y_t = level_t + noise, the level a random walk with slope (deterministic LCG noise)
std::string input(std::int64_t n, bool json) {
  const fs::path p = work_dir() / ("y" + std::to_string(n) + (json ? ".json" : ".csv"));
  if (fs::exists(p)) return p.string();
  std::ofstream f(p);
  std::uint64_t s = 12345;
  auto noise = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5) * 2.0;
  };
  double level = 1000, slope = 0;
  f << (json ? "{\"s\": 120, \"w\": [40, 1], \"y\": [" : "");
  for (std::int64_t t = 0; t < n; ++t) {
    slope += 0.5 * noise();
    level += slope + 40 * noise();
    char b[64];
    std::snprintf(b, sizeof b, "%s%.3f%s", json && t ? "," : "", level + 120 * noise(), json ? "" : "\n");
    f << b;
  }
  f << (json ? "]}\n" : "");
  return p.string();
}

struct Run {
  double seconds, peak_rss_mb;
};
Run run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("jxlab dlm fit failed");
  return {s, ru.ru_maxrss / 1024.0};
}

// range(0): N; range(1): input 0 CSV, 1 JSON; range(2): output 0 npz, 1 JSON; range(3): 1 to
// replace an existing output (ext4 then writes the new file's blocks out at the rename, its
// auto_da_alloc: ~10 ms more for 18.8 MB here), 0 to write a new file (the output of the previous
// run removed, untimed).
void BM_CliFit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const bool json_in = st.range(1) != 0, json_out = st.range(2) != 0, replace = st.range(3) != 0;
  const std::string in = input(n, json_in), out = (work_dir() / (json_out ? "out.json" : "out.npz")).string();
  std::vector<std::string> args{jxlab_path(), "dlm", "fit", "--in", in, "--out", out};
  if (!json_in) args.insert(args.end(), {"--s", "120", "--w", "40", "1"});
  run(args);  // warm: the native cache holds this fit's kernels
  double rss = 0, total = 0;
  for (auto _ : st) {
    if (!replace) fs::remove(out);
    const Run r = run(args);
    st.SetIterationTime(r.seconds);
    rss = std::max(rss, r.peak_rss_mb);
    total += r.seconds;
  }
  // dlm-js's figure is for N = 102400 only
  if (n == 102400) st.counters["vs_dlm_js"] = total / static_cast<double>(st.iterations()) / (kDlmJsMs / 1000);
  st.counters["peak_rss_mb"] = rss;
  st.counters["output_mb"] = static_cast<double>(fs::file_size(out)) / 1e6;
  st.counters["rows"] = static_cast<double>(n);
  st.SetLabel(std::string(json_in ? "json" : "csv") + " -> " + (json_out ? "json" : "npz") +
              (replace ? ", replacing" : ""));
}

}  // namespace

BENCHMARK(BM_CliFit)
    ->Args({102400, 0, 0, 0})
    ->Args({102400, 1, 0, 0})
    ->Args({102400, 0, 1, 0})
    ->Args({102400, 1, 1, 0})
    ->Args({102400, 0, 0, 1})
    ->Args({1000000, 0, 0, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("dlm_js_ms_at_102400", std::to_string(kDlmJsMs));
  const char* machine = std::getenv("JXBENCH_MACHINE");  // e.g. "dev container, 2 cores"
  benchmark::AddCustomContext("machine", machine ? machine : "unnamed (set JXBENCH_MACHINE)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(work_dir(), ec);
  return 0;
}
