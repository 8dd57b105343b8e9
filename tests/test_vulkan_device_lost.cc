// Injected VK_ERROR_DEVICE_LOST (core/instrument/faults.h): a clear jx error; the vulkan backend
// is then unavailable for the rest of the process with the reason, arrays on it can still be
// disposed (nothing leaks), and cpu and native keep working. Its own binary: the loss is final.
#include "core/instrument/faults.h"
#include "leakcheck/leakcheck.h"
#include "tests/vulkan_helpers.h"

using namespace jx;

namespace {

Array work(const Array& x) { return np::sum(np::exp(x * 0.5) + np::cos(x)); }

void lose_device(const char* at, int after) {
  DefaultDeviceScope host("cpu");  // also under JX_DEVICE=vulkan
  const auto base = leak_baseline("device lost");
  {
    Array x = np::array(jxt::randn(1000, 9), Shape{1000}, DType::float32);
    const double want = work(x).item<float>();
    auto f = jit([](const std::vector<Array>& a) { return work(a[0]); });
    Array xv = device_put(x, "vulkan");
    EXPECT_NEAR(f(std::vector<Array>{xv}).item<float>(), want, 1e-3 * std::abs(want));  // healthy first
    faults::arm("vk_device_lost", after, 1);
    EXPECT_TRUE(jxt::throws_with<BackendError>(
        [&] { f(std::vector<Array>{xv}).item<float>(); },
        {"vulkan: device lost", at, "VK_ERROR_DEVICE_LOST", "other backends are unaffected"}));
    faults::disarm_all();
    // from now on every vulkan operation says why, without touching the device
    for (const auto& d : devices())
      if (d.backend == "vulkan") {
        EXPECT_FALSE(d.available);
        EXPECT_NE(d.reason.find("device was lost"), std::string::npos) << d.reason;
      }
    EXPECT_TRUE(jxt::throws_with<BackendError>([&] { f(std::vector<Array>{xv}).item<float>(); },
                                               {"vulkan: backend unavailable", "device was lost"}));
    EXPECT_TRUE(jxt::throws_with<BackendError>([&] { (void)device_put(x, "vulkan"); }, {"device was lost"}));
    EXPECT_TRUE(jxt::throws_with<BackendError>([&] { xv.to_vector<float>(); }, {"device was lost"}));
    // cpu and native still compute, eager and jitted
    EXPECT_NEAR(f(std::vector<Array>{x}).item<float>(), want, 1e-4 * std::abs(want));
    EXPECT_NEAR(f(std::vector<Array>{device_put(x, "native")}).item<float>(), want, 1e-4 * std::abs(want));
    vulkan::synchronize();  // a no-op once lost, never a throw
    clear_caches();
  }  // xv and the program's buffers are released here, on the lost device
  EXPECT_TRUE(leaked_since(base).empty()) << leak_report("device lost", leaked_since(base));
}

}  // namespace

// One loss per process: ctest runs each test alone; run directly, the first one ends vulkan and
// the second finds it already lost (so it checks only that path).
TEST(VulkanDeviceLost, AtSubmitGivesAClearErrorAndOtherBackendsStayUsable) {
  if (!faults::fired("vk_device_lost")) lose_device("vkQueueSubmit", 0);
}

TEST(VulkanDeviceLost, AtFenceWaitGivesAClearErrorAndOtherBackendsStayUsable) {
  if (!faults::fired("vk_device_lost")) {
    lose_device("vkWaitForFences", 1);  // the submit before the wait passes
  } else {
    EXPECT_TRUE(jxt::throws_with<BackendError>([] { (void)device_put(np::ones({3}), "vulkan"); }, {"device was lost"}));
  }
}
