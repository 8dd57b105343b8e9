#include "leakcheck/gtest_listener.h"

namespace jx {

void LeakCheckListener::OnTestStart(const ::testing::TestInfo& info) {
  base_ = leak_baseline(std::string(info.test_suite_name()) + "." + info.name());
}

void LeakCheckListener::OnTestEnd(const ::testing::TestInfo&) {
  auto leaked = leaked_since(base_);
  if (!leaked.empty()) ADD_FAILURE() << leak_report(base_.name, leaked);
}

void install_leak_check_listener() { ::testing::UnitTest::GetInstance()->listeners().Append(new LeakCheckListener); }

}  // namespace jx
