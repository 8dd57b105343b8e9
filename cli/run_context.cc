#include "cli/run_context.h"

#include <cstdio>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <string_view>
#include <unistd.h>

#include "cli/lab_commands.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/jx.h"

extern char** environ;

namespace jx::lab {
namespace {

// One line of a command's output (first line, trimmed), or "" when it fails.
std::string capture(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string machine() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::ifstream f("/proc/cpuinfo");
  std::string line, cpu;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  return fmt::format("{} ({}, {} cores)", host, cpu.empty() ? "unknown CPU" : cpu, sysconf(_SC_NPROCESSORS_ONLN));
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The run's context for the reports, read now (not at configure time).
nlohmann::json run_context(const std::string& command_line) {
  nlohmann::json c;
  c["command"] = command_line;
#if defined(__clang__)
  c["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  c["compiler"] = std::string("gcc ") + __VERSION__;
#endif
  const std::string src = default_scenarios_dir() + "/..";
  const std::string commit = capture(fmt::format("git -C '{}' rev-parse HEAD 2>/dev/null", src));
  c["git_commit"] = commit.empty() ? std::string("unknown (not a git checkout)") : commit;
  if (!commit.empty())
    c["git_dirty"] =
        !capture(fmt::format("git -C '{}' status --porcelain --untracked-files=no 2>/dev/null", src)).empty();
  for (const auto& d : devices())
    c["device." + d.backend] = d.available ? d.device : fmt::format("unavailable: {}", d.reason);
  // every Vulkan device the loader lists: driver, Vulkan version, limits
  const auto vk = vulkan::describe_devices();
  for (std::size_t i = 0; i < vk.size(); ++i) c[fmt::format("vulkan.device{}", i)] = vk[i];
  for (char** e = environ; e && *e; ++e)
    if (std::string_view(*e).rfind("JX_", 0) == 0) {
      const std::string kv(*e);
      c["env." + kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
  return c;
}

std::string short_commit(const nlohmann::json& context) {
  const std::string gc = context.value("git_commit", "");
  if (gc.empty() || gc.find("unknown") != std::string::npos) return "";
  return gc.substr(0, 7) + (context.value("git_dirty", false) ? "+dirty" : "");
}

}  // namespace jx::lab
