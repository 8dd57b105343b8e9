// main() of every test binary: GoogleTest with the leak-check listener installed; vulkan is torn
// down before the exit handlers run.
#include <gtest/gtest.h>

#include "core/backends/vulkan/vulkan.h"
#include "core/jit/jit.h"
#include "leakcheck/gtest_listener.h"

int main(int argc, char** argv) {
  jx::ShutdownAtExit vulkan_teardown;
  ::testing::InitGoogleTest(&argc, argv);
  jx::install_leak_check_listener();
  return RUN_ALL_TESTS();
}
