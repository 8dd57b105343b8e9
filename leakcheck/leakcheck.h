#pragma once
#include <exception>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/backends/backend.h"

// Slot-count leak checking over every instantiated backend. A "leak" is a slot alive at the
// check that was not alive at the baseline (slot ids are never reused, so this is exact).
namespace jx {

struct LeakBaseline {
  std::string name;
  std::set<SlotId> live;
};

LeakBaseline leak_baseline(std::string name = "leak check");
std::vector<SlotInfo> leaked_since(const LeakBaseline& b);
// "leak check 'name': 2 slots leaked (24 bytes): #17 float32[2,2] (16 bytes), #18 int32[2] (8 bytes)"
std::string leak_report(const std::string& name, const std::vector<SlotInfo>& leaked);
// Throws LeakError with leak_report(...) when anything leaked.
void assert_no_leaks(const LeakBaseline& b, const std::string& name);

// RAII scope: checks at destruction and throws LeakError there unless an exception is already
// propagating (then it only reports to stderr). check() checks early and disarms.
class LeakCheck {
 public:
  explicit LeakCheck(std::string name = "LeakCheck");
  ~LeakCheck() noexcept(false);
  LeakCheck(const LeakCheck&) = delete;
  LeakCheck& operator=(const LeakCheck&) = delete;
  std::vector<SlotInfo> leaked() const { return leaked_since(base_); }
  void check();

 private:
  LeakBaseline base_;
  int uncaught_;
  bool armed_ = true;
};

// Runs fn and asserts that it left no slot behind. Results must not hold arrays (read them to
// host values inside fn): an Array escaping fn is exactly what this reports.
template <class F>
auto with_leak_check(F&& fn, const std::string& name = "with_leak_check") {
  auto base = leak_baseline(name);
  if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
    std::forward<F>(fn)();
    assert_no_leaks(base, name);
  } else {
    auto r = std::forward<F>(fn)();
    assert_no_leaks(base, name);
    return r;
  }
}

}  // namespace jx
