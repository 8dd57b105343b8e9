// Injected faults (core/instrument/faults.h): the switch itself, Vulkan out-of-device-memory in
// the middle of a jitted program (a clear error, nothing leaked, the backend still works), and a
// corrupted, truncated or digest-less native compile-cache entry (detected and rebuilt).
// Device loss has its own binary (test_vulkan_device_lost): it ends the backend for the process.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/backends/native/compiler.h"
#include "core/instrument/faults.h"
#include "leakcheck/leakcheck.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
namespace fs = std::filesystem;

namespace {

struct Disarm {
  ~Disarm() { faults::disarm_all(); }
};

Array model(const Array& x, const Array& w) {
  return np::sum(np::tanh(np::matmul(x, w)) * 2.0) + np::sum(np::exp(x * 0.1));
}

}  // namespace

TEST(Faults, SpecArmsCountsAndRejectsBadEntries) {
  Disarm d;
  faults::arm_from_spec("vk_device_lost@2:2");
  const auto before = faults::fired("vk_device_lost");
  std::vector<bool> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(faults::fire("vk_device_lost"));
  EXPECT_EQ(seen, (std::vector<bool>{false, false, true, true, false, false}));
  EXPECT_EQ(faults::fired("vk_device_lost"), before + 2);
  faults::arm("report_write_stall", 0, -1);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(faults::fire("report_write_stall"));
  faults::disarm_all();
  EXPECT_FALSE(faults::fire("report_write_stall"));
  EXPECT_TRUE(jxt::throws_with<Error>([] { faults::arm_from_spec("vk_oom"); },
                                      {"unknown fault 'vk_oom'", "vk_out_of_device_memory"}));
  EXPECT_TRUE(jxt::throws_with<Error>([] { faults::arm_from_spec("vk_device_lost@two"); },
                                      {"'vk_device_lost@two'", "'two' is not an integer"}));
}

TEST(VulkanFaults, OutOfDeviceMemoryMidProgramIsAClearErrorAndTheBackendStaysUsable) {
  Disarm d;
  Array x = np::array(jxt::randn(64 * 48, 3), Shape{64, 48}, DType::float32);
  Array w = np::array(jxt::randn(48 * 40, 4), Shape{48, 40}, DType::float32);
  const double want = model(x, w).item<double>();
  auto f = jit([](const std::vector<Array>& a) { return model(a[0], a[1]); });
  auto xv = jxt::on({x, w}, "vulkan");
  vulkan::synchronize();
  const auto base = leak_baseline("oom");
  for (int after : {0, 1, 2}) {
    clear_caches();  // empties the buffer pool: the program's buffers are new allocations
    faults::arm("vk_out_of_device_memory", after, 1);
    EXPECT_TRUE(jxt::throws_with<BackendError>([&] { f(xv).item<double>(); },
                                               {"vulkan: out of device memory", "VK_ERROR_OUT_OF_DEVICE_MEMORY"}))
        << "allocation " << after;
    EXPECT_EQ(faults::fired("vk_out_of_device_memory") > 0, true);
    EXPECT_TRUE(leaked_since(base).empty())
        << leak_report("after OOM at allocation " + std::to_string(after), leaked_since(base));
  }
  // the same program, and eager work, still run on vulkan afterwards, and match cpu
  EXPECT_NEAR(f(xv).item<double>(), want, 1e-3 * std::abs(want));
  DefaultDeviceScope vk("vulkan");
  EXPECT_NEAR(model(xv[0], xv[1]).item<double>(), want, 1e-3 * std::abs(want));
}

namespace {

// A fresh compile cache per test.
using CacheDir = jxt::PrivateNativeCache;

const char* kSource = "double jx_fault_probe(double x) { return 3.0 * x + 1.0; }\n";

double call_probe(const native::CompileResult& r) {
  auto fn = reinterpret_cast<double (*)(double)>(r.lib->symbol("jx_fault_probe"));
  return fn(2.0);
}

// Compiles, drops the library (unloading it), damages the cached object with `damage`, and
// compiles again: the entry must be rejected for `reason` and rebuilt, and the result must work.
void damaged_entry_is_rebuilt(const std::function<void(const fs::path& so, const fs::path& sum)>& damage,
                              const std::string& reason) {
  CacheDir dir("jx-fault-cache");
  fs::path so;
  {
    auto first = native::compile(kSource);
    EXPECT_FALSE(first.from_disk);
    EXPECT_EQ(call_probe(first), 7.0);
    so = first.path;
  }
  {
    auto again = native::compile(kSource);  // intact: loaded from disk
    EXPECT_TRUE(again.from_disk);
    EXPECT_TRUE(again.rejected.empty());
  }
  damage(so, so.string() + ".sum");
  auto rebuilt = native::compile(kSource);
  EXPECT_FALSE(rebuilt.from_disk);
  EXPECT_NE(rebuilt.rejected.find(reason), std::string::npos) << rebuilt.rejected;
  EXPECT_EQ(call_probe(rebuilt), 7.0);
  auto after = native::compile(kSource);  // the rebuilt entry is whole again
  EXPECT_TRUE(after.from_disk);
}

}  // namespace

TEST(NativeCacheFaults, TruncatedEntryIsDetectedAndRebuilt) {
  damaged_entry_is_rebuilt([](const fs::path& so, const fs::path&) { fs::resize_file(so, fs::file_size(so) / 2); },
                           "digest mismatch");
}

TEST(NativeCacheFaults, CorruptedEntryIsDetectedAndRebuilt) {
  // same size, bytes flipped in the middle (where code lives): dlopen alone would accept it
  damaged_entry_is_rebuilt(
      [](const fs::path& so, const fs::path&) {
        std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
        const auto n = static_cast<std::streamoff>(fs::file_size(so));
        for (std::streamoff i = n / 3; i < n / 3 + 64; ++i) {
          f.seekg(i);
          char c = static_cast<char>(f.get());
          f.seekp(i);
          f.put(static_cast<char>(c ^ 0x5a));
        }
      },
      "digest mismatch");
}

TEST(NativeCacheFaults, EntryWithoutDigestIsRebuilt) {
  // a process killed between installing the object and its digest
  damaged_entry_is_rebuilt([](const fs::path&, const fs::path& sum) { fs::remove(sum); }, "no digest");
}

TEST(NativeCacheFaults, GarbageEntryWithMatchingNameIsRebuiltByTheBackend) {
  // the backend path: a jitted program on native whose cached object was replaced by garbage
  CacheDir dir("jx-fault-cache");
  Array x = np::array({1.0, 2.0, 3.0}, DType::float64);
  auto f = jit([](const std::vector<Array>& a) { return np::sin(a[0]) * 2.0 + 1.0; });
  const auto want = jxt::vals(f(std::vector<Array>{x}));
  {
    DefaultDeviceScope n("native");
    EXPECT_TRUE(jxt::all_close(f(std::vector<Array>{device_put(x, "native")}), want));
  }
  clear_caches();
  int damaged = 0;
  for (auto& e : fs::directory_iterator(dir.path))
    if (e.path().extension() == ".so") {
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "not an object";
      ++damaged;
    }
  EXPECT_GE(damaged, 1);
  DefaultDeviceScope n("native");
  EXPECT_TRUE(jxt::all_close(f(std::vector<Array>{device_put(x, "native")}), want));
}
