// main() of every test binary: GoogleTest with the leak-check listener installed.
#include <gtest/gtest.h>

#include "leakcheck/gtest_listener.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  jx::install_leak_check_listener();
  return RUN_ALL_TESTS();
}
