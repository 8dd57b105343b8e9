// main() of every test binary: GoogleTest with the leak-check listener installed; vulkan is torn
// down before the exit handlers run.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/backends/vulkan/vulkan.h"
#include "core/jit/jit.h"
#include "leakcheck/gtest_listener.h"

namespace {
// GoogleTest's sharding variables (ctest runs sanitized binaries as shards) are for this process:
// it has chosen its tests when environments are set up; the jxlab processes a test starts would
// read them as a sharding of their own scenario cases.
struct ForgetShards : ::testing::Environment {
  void SetUp() override {
    ::unsetenv("GTEST_TOTAL_SHARDS");
    ::unsetenv("GTEST_SHARD_INDEX");
  }
};
}  // namespace

int main(int argc, char** argv) {
  jx::ShutdownAtExit vulkan_teardown;
  ::testing::InitGoogleTest(&argc, argv);
  jx::install_leak_check_listener();
  ::testing::AddGlobalTestEnvironment(new ForgetShards);  // GoogleTest owns it
  return RUN_ALL_TESTS();
}
