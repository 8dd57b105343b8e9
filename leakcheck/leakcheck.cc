#include "leakcheck/leakcheck.h"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>

namespace jx {

LeakBaseline leak_baseline(std::string name) {
  LeakBaseline b{std::move(name), {}};
  for (auto& s : live_slots()) b.live.insert(s.id);
  return b;
}

std::vector<SlotInfo> leaked_since(const LeakBaseline& b) {
  std::vector<SlotInfo> out;
  for (auto& s : live_slots())
    if (!b.live.count(s.id)) out.push_back(s);
  std::sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.id < y.id; });
  return out;
}

std::string leak_report(const std::string& name, const std::vector<SlotInfo>& leaked) {
  std::size_t bytes = 0;
  std::string items;
  for (std::size_t i = 0; i < leaked.size(); ++i) {
    bytes += leaked[i].bytes;
    if (i < 20)
      items += fmt::format("{}#{} {} ({} bytes)", i ? ", " : "", leaked[i].id, leaked[i].tag.str(), leaked[i].bytes);
  }
  if (leaked.size() > 20) items += fmt::format(", ... {} more", leaked.size() - 20);
  return fmt::format("leak check '{}': {} slot{} leaked ({} bytes): {}", name, leaked.size(),
                     leaked.size() == 1 ? "" : "s", bytes, items);
}

void assert_no_leaks(const LeakBaseline& b, const std::string& name) {
  auto l = leaked_since(b);
  if (!l.empty()) throw LeakError(leak_report(name, l));
}

LeakCheck::LeakCheck(std::string name) : base_(leak_baseline(std::move(name))), uncaught_(std::uncaught_exceptions()) {}

void LeakCheck::check() {
  armed_ = false;
  assert_no_leaks(base_, base_.name);
}

LeakCheck::~LeakCheck() noexcept(false) {
  if (!armed_) return;
  auto l = leaked_since(base_);
  if (l.empty()) return;
  if (std::uncaught_exceptions() > uncaught_) {
    std::fprintf(stderr, "%s (while unwinding)\n", leak_report(base_.name, l).c_str());
    return;
  }
  throw LeakError(leak_report(base_.name, l));
}

}  // namespace jx
