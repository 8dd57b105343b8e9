#include "core/instrument/instrument.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "core/base/hash.h"

namespace jx {
namespace trace {
namespace {
struct Subscribers {
  std::mutex mu;
  std::map<std::uint64_t, Callback> cbs;
  std::uint64_t next = 1;
  std::atomic<int> count{0};
};
Subscribers& subs() {
  static Subscribers* s = new Subscribers();  // immortal: events may fire during static destruction
  return *s;
}
}  // namespace

Subscription::Subscription(Callback cb) {
  auto& s = subs();
  std::lock_guard lock(s.mu);
  id_ = s.next++;
  s.cbs.emplace(id_, std::move(cb));
  s.count = static_cast<int>(s.cbs.size());
}

Subscription::~Subscription() {
  auto& s = subs();
  std::lock_guard lock(s.mu);
  s.cbs.erase(id_);
  s.count = static_cast<int>(s.cbs.size());
}

bool has_subscribers() { return subs().count.load(std::memory_order_relaxed) > 0; }

void emit(const Event& e) {
  if (!has_subscribers()) return;
  auto& s = subs();
  std::vector<Callback> cbs;
  {
    std::lock_guard lock(s.mu);
    for (auto& [_, cb] : s.cbs) cbs.push_back(cb);
  }
  for (auto& cb : cbs) cb(e);
}

DispatchTracker::DispatchTracker()
    : sub_([this](const Event& e) {
        if (e.kind != EventKind::dispatch) return;
        ++n_;
        if (e.fused) ++fused_;
        if (e.buffers > max_buffers_) max_buffers_ = e.buffers;
        ++per_name_[e.name];
      }) {}

}  // namespace trace

namespace {
std::atomic<int>& level() {
  static std::atomic<int> l{[] {
    const char* e = std::getenv("JX_DEBUG");
    return e ? std::atoi(e) : 0;
  }()};
  return l;
}
}  // namespace

void set_debug(int l) { level() = l; }

void dump_source(const std::string& text, const char* ext) {
  static const char* dir = std::getenv("JX_DUMP_SOURCES");
  if (!dir || !*dir) return;
  const std::uint64_t h = fnv1a(text);
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  std::ofstream(std::string(dir) + "/" + name + "." + ext) << text;
}
int debug_level() { return level().load(std::memory_order_relaxed); }
void debug_log(int l, const std::string& msg) {
  if (debug_level() >= l) std::fprintf(stderr, "[jx] %s\n", msg.c_str());
}

double process_rss_kb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1024.0;
}

}  // namespace jx
