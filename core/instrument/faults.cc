#include "core/instrument/faults.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>

#include "core/base/errors.h"

namespace jx::faults {
namespace {

struct Armed {
  int after = 0, times = 0;  // times < 0: for ever
  std::uint64_t fired = 0;
};

std::mutex g_mu;
std::atomic<bool> g_any{false};

std::map<std::string, Armed, std::less<>>& table() {
  static std::map<std::string, Armed, std::less<>> t = [] {
    std::map<std::string, Armed, std::less<>> m;
    for (const auto& n : names()) m[n] = {};
    return m;
  }();
  return t;
}

Armed& entry(std::string_view name) {
  auto& t = table();
  auto it = t.find(name);
  if (it == t.end()) throw Error(fmt::format("unknown fault '{}' (known: {})", name, fmt::join(names(), ", ")));
  return it->second;
}

int parse_int(std::string_view s, std::string_view item) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw Error(fmt::format("JX_FAULTS entry '{}': '{}' is not an integer", item, s));
  return v;
}

// JX_FAULTS is read once, at the first injection point reached or fault call.
void arm_from_env_once() {
  static const bool done = [] {
    if (const char* e = std::getenv("JX_FAULTS"); e && *e) arm_from_spec(e);
    return true;
  }();
  (void)done;
}

}  // namespace

const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {"vk_out_of_device_memory", "vk_device_lost", "report_write_stall",
                                             "native_wrong_tanh"};
  return n;
}

void arm(std::string_view name, int after, int times) {
  std::lock_guard lock(g_mu);
  Armed& a = entry(name);
  a.after = after;
  a.times = times;
  g_any = true;
}

void disarm_all() {
  std::lock_guard lock(g_mu);
  for (auto& [n, a] : table()) a.times = 0;
  g_any = false;
}

bool fire(std::string_view name) {
  arm_from_env_once();
  if (!g_any.load(std::memory_order_relaxed)) return false;
  std::lock_guard lock(g_mu);
  Armed& a = entry(name);
  if (a.times == 0) return false;
  if (a.after > 0) {
    --a.after;
    return false;
  }
  if (a.times > 0) --a.times;
  ++a.fired;
  return true;
}

std::uint64_t fired(std::string_view name) {
  std::lock_guard lock(g_mu);
  return entry(name).fired;
}

void arm_from_spec(std::string_view spec) {
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    int after = 0, times = 1;
    std::string_view name = item;
    if (auto colon = name.find(':'); colon != std::string_view::npos) {
      times = parse_int(name.substr(colon + 1), item);
      name = name.substr(0, colon);
    }
    if (auto at = name.find('@'); at != std::string_view::npos) {
      after = parse_int(name.substr(at + 1), item);
      name = name.substr(0, at);
    }
    arm(name, after, times);
  }
}

}  // namespace jx::faults
