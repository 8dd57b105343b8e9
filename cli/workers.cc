#include "cli/workers.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace jx::lab {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Running {
  pid_t pid;
  std::size_t unit;
  Clock::time_point start;
  fs::path result, log;
  std::string killed;  // why we killed it ("timeout", "oom"), with the figure in `why`
  std::string why;
};

// The worker: `jxlab run ID --backend B --profile P --worker-result FILE` in its own process
// group (a terminal's SIGINT reaches only the parent, which decides), killed with its parent.
pid_t spawn(const WorkUnit& u, const Running& r, const std::string& dir, int point_calls) {
  const std::string calls = std::to_string(point_calls);
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setpgid(0, 0);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  unsetenv("GTEST_TOTAL_SHARDS");  // the runner has sharded already
  unsetenv("GTEST_SHARD_INDEX");
  const int log = ::open(r.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log >= 0) dup2(log, 1), dup2(log, 2);
  execl(exe.c_str(), exe.c_str(), "run", u.scenario->id.c_str(), "--scenarios", dir.c_str(), "--backend",
        u.backend.c_str(), "--profile", u.profile.c_str(), "--point-calls", calls.c_str(), "--worker-result",
        r.result.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

std::int64_t resident_mb(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/statm", pid));
  std::int64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE) / (1024 * 1024);
}

std::string tail_of(const fs::path& log, std::size_t lines) {
  std::ifstream f(log);
  std::deque<std::string> last;
  for (std::string l; std::getline(f, l);) {
    last.push_back(l);
    if (last.size() > lines) last.pop_front();
  }
  std::string s;
  for (const auto& l : last) s += (s.empty() ? "" : " | ") + l;
  return s;
}

CaseResult base_result(const WorkUnit& u) {
  CaseResult r{u.scenario->id,
               u.scenario->title,
               u.scenario->file,
               u.backend,
               u.profile,
               "fail",
               {},
               "",
               nlohmann::json::object(),
               0,
               nlohmann::json::object()};
  for (const Case& c : u.scenario->cases)
    if (c.profile == u.profile) r.expect = c.expect_json;
  return r;
}

// What the worker printed (JX_DEBUG logs, warnings) goes to the runner's stderr, a case at a time.
void pass_through(const fs::path& log) {
  std::ifstream f(log, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stderr);
}

// What a finished worker amounts to.
CaseResult collect(const WorkUnit& u, const Running& w, int status) {
  CaseResult r = base_result(u);
  r.seconds = std::chrono::duration<double>(Clock::now() - w.start).count();
  if (!w.killed.empty()) {
    r.status = w.killed;
    r.failures.push_back(w.why);
    return r;
  }
  if (WIFSIGNALED(status)) {
    r.status = "crash";
    r.failures.push_back(fmt::format("the worker crashed with signal {} ({}); its last output: {}",
                                     strsignal(WTERMSIG(status)), WTERMSIG(status), tail_of(w.log, 6)));
    return r;
  }
  std::ifstream in(w.result);
  const nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
  if (!j.is_array() || j.size() != 1) {
    r.status = "crash";
    r.failures.push_back(fmt::format("the worker exited with {} without a result; its last output: {}",
                                     WEXITSTATUS(status), tail_of(w.log, 6)));
    return r;
  }
  return case_from_json(j[0]);
}

}  // namespace

std::vector<CaseResult> run_isolated(const std::vector<WorkUnit>& units, const WorkerOptions& o) {
  const fs::path work = fs::temp_directory_path() / fmt::format("jxlab-workers-{}", getpid());
  fs::create_directories(work);
  std::vector<std::optional<CaseResult>> out(units.size());
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < units.size(); ++i) queue.push_back(i);
  std::vector<Running> running;
  std::map<std::string, std::string> lost;  // backend -> why
  bool halted = false;
  auto done = [&](std::size_t i, CaseResult r) {
    if (r.backend_lost && !lost.contains(r.backend))
      lost[r.backend] = fmt::format("the {} backend was lost in {}", r.backend, r.name());
    if (o.fail_fast && r.status != "pass" && r.status != "skipped") halted = true;
    if (o.finished) o.finished(r);
    out[i] = std::move(r);
  };
  while (!running.empty() || (!queue.empty() && !halted)) {
    if (o.stop && o.stop()) {  // interrupted: the running are stopped, nothing more starts
      for (const Running& w : running) kill(-w.pid, SIGKILL), kill(w.pid, SIGKILL);
      for (const Running& w : running) waitpid(w.pid, nullptr, 0);
      running.clear();
      break;
    }
    bool started = false;
    while (running.size() < static_cast<std::size_t>(std::max(1, o.jobs)) && !queue.empty() && !halted) {
      const std::size_t i = queue.front();
      queue.pop_front();
      if (auto it = lost.find(units[i].backend); it != lost.end()) {
        CaseResult r = base_result(units[i]);
        r.status = "skipped", r.skip_reason = it->second;
        done(i, std::move(r));
        continue;
      }
      Running w{0,  i, Clock::now(), work / fmt::format("case-{}.json", i), work / fmt::format("case-{}.log", i),
                "", ""};
      w.pid = spawn(units[i], w, o.scenarios_dir, o.point_calls);
      running.push_back(w);
      started = true;
    }
    if (started && o.running) {
      std::vector<std::string> names;
      for (const Running& w : running)
        names.push_back(units[w.unit].scenario->id + "/" + units[w.unit].backend + "/" + units[w.unit].profile);
      o.running(names);
    }
    for (std::size_t k = 0; k < running.size();) {
      Running& w = running[k];
      int status = 0;
      if (waitpid(w.pid, &status, WNOHANG) == w.pid) {
        kill(-w.pid, SIGKILL);  // anything it left in its group (a compiler)
        if (WIFEXITED(status) && w.killed.empty()) pass_through(w.log);
        done(w.unit, collect(units[w.unit], w, status));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      const double secs = std::chrono::duration<double>(Clock::now() - w.start).count();
      const std::int64_t mb = w.killed.empty() ? resident_mb(w.pid) : 0;
      if (w.killed.empty() && secs > units[w.unit].timeout_s)
        w.killed = "timeout",
        w.why =
            fmt::format("timeout: still running after {:.0f} s (limit {:g} s: --timeout or the scenario's timeout_s)",
                        secs, units[w.unit].timeout_s);
      else if (w.killed.empty() && o.memory_limit_mb > 0 && mb > o.memory_limit_mb)
        w.killed = "oom", w.why = fmt::format("oom: resident memory {} MB over the limit of {} MB (--memory-limit)", mb,
                                              o.memory_limit_mb);
      if (!w.killed.empty()) kill(-w.pid, SIGKILL), kill(w.pid, SIGKILL);
      ++k;
    }
    usleep(10000);
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  std::vector<CaseResult> res;
  for (auto& r : out)
    if (r) res.push_back(std::move(*r));
  return res;
}

}  // namespace jx::lab
