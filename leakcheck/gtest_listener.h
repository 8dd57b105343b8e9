#pragma once
#include <gtest/gtest.h>

#include "leakcheck/leakcheck.h"

namespace jx {

// Fails any test that ends with more live slots than it started with, naming each leaked slot.
// OnTestEnd runs listeners in reverse order, so appended after the default printer it records
// the failure before "[ OK ]" would be printed.
class LeakCheckListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  LeakBaseline base_;
};

void install_leak_check_listener();

}  // namespace jx
