#pragma once
// Shared by the Vulkan test binaries: device placement and the validation-message listener
// (JX_VULKAN_VALIDATION=1: any validation message fails the test that produced it).
#include "core/backends/vulkan/vulkan.h"
#include "tests/helpers.h"

namespace jxt {

inline std::vector<jx::Array> on(const std::vector<jx::Array>& xs, const std::string& be) {
  std::vector<jx::Array> r;
  for (const jx::Array& x : xs) r.push_back(jx::device_put(x, be));
  return r;
}

// Runs f twice on vulkan (the first call compiles) and returns the second call's counters.
template <class F>
jx::vulkan::Counters second_call_counters(F&& f) {
  f();
  jx::vulkan::synchronize();
  jx::vulkan::reset_counters();
  f();
  jx::vulkan::synchronize();
  return jx::vulkan::counters();
}

// Dispatches recorded while f runs (after a warm-up call that compiles).
template <class F>
std::uint64_t dispatches_of(F&& f) {
  return second_call_counters(f).dispatches;
}

class ValidationListener : public ::testing::EmptyTestEventListener {
  std::size_t before_ = 0;
  void OnTestStart(const ::testing::TestInfo&) override { before_ = jx::vulkan::validation_message_count(); }
  void OnTestEnd(const ::testing::TestInfo&) override {
    jx::vulkan::synchronize();
    const std::size_t now = jx::vulkan::validation_message_count();
    if (now != before_) {
      auto msgs = jx::vulkan::validation_messages();
      ADD_FAILURE() << (now - before_) << " Vulkan validation message(s); last: " << (msgs.empty() ? "" : msgs.back());
    }
  }
};

inline const bool g_validation_listener = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ValidationListener);
  return true;
}();

}  // namespace jxt
