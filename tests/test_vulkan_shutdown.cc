// jx::shutdown() destroys every Vulkan object, the instance included, from the program (not an
// exit handler): no validation message, arrays still on the backend only drop their references,
// and the backend then reports itself unavailable with the reason. Its own binary: the backend
// stays shut down for the rest of the process.
#include "core/backends/vulkan/vulkan.h"
#include "tests/vulkan_helpers.h"

using namespace jx;

TEST(VulkanShutdown, ReleasesEverythingAndLeavesAClearError) {
  Array x = device_put(np::arange(0, 10, 1), "vulkan");
  Array y = jit([](const Array& a) { return np::sum(a * 2.0); })(x);
  EXPECT_DOUBLE_EQ(y.item<double>(), 90.0);
  const std::size_t before = vulkan::validation_message_count();
  jx::shutdown();
  EXPECT_EQ(vulkan::validation_message_count(), before);
  EXPECT_TRUE(
      jxt::throws_with<BackendError>([&] { (void)np::sum(x); }, {"the vulkan backend was shut down (jx::shutdown)"}));
  EXPECT_TRUE(jxt::throws_with<BackendError>([] { (void)backend("vulkan"); }, {"jx::shutdown"}));
  jx::shutdown();  // a second call is a no-op
  x = Array();     // dropping handles after shutdown is safe
  y = Array();
}
