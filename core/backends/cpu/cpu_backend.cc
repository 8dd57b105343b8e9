#include "core/backends/cpu/cpu_backend.h"
#include "core/backends/cache_bound.h"

#include <fmt/format.h>
#include <thread>

#include "core/backends/host_memory.h"

namespace jx {
namespace {

struct CpuKernelExecutable final : HostExecutable {
  Kernel k;
  explicit CpuKernelExecutable(Kernel kk) : k(std::move(kk)) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override {
    cpu_run_kernel(k, in, out[0]);
  }
};

// Under AddressSanitizer the oracle's slots are plain host memory, so a read of a freed slot is
// reported where it happens; otherwise they come from the size-class pool the native backend uses
// (an eager program frees and allocates arrays of a few sizes op after op: through malloc that
// was a fifth of a vulkan test's time, its cpu oracle's frees and consolidations).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCpuPooled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCpuPooled = false;
#else
constexpr bool kCpuPooled = true;
#endif
#else
constexpr bool kCpuPooled = true;
#endif

// The oracle: every op interpreted.
class CpuBackend final : public HostBackend {
 public:
  CpuBackend() : HostBackend("cpu", kCpuPooled) {
    info_.backend = "cpu";
    info_.device = fmt::format("host reference interpreter ({} hardware threads)", std::thread::hardware_concurrency());
    info_.available = true;
    info_.limits = {0, true};
  }

  const DeviceInfo& info() const override { return info_; }

  BackendMemory memory() const override {
    BackendMemory m = mem_.stats();
    std::lock_guard lock(kmu_);
    m.compiled_kernels = kernels_.size();
    return m;
  }

  void clear_caches() override {
    std::lock_guard lock(kmu_);
    kernels_.clear();
  }

  std::shared_ptr<Executable> prepare(const Op& op) override { return make_host_op_executable(op); }

  // The cpu backend compiles nothing; its "compiled kernel" is the validated IR, cached by key.
  std::shared_ptr<Executable> prepare_kernel(const Kernel& k) override {
    std::lock_guard lock(kmu_);
    auto key = k.key();
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    auto exe = std::make_shared<CpuKernelExecutable>(k);
    trim_unused(kernels_);
    kernels_.emplace(std::move(key), exe);
    return exe;
  }

 private:
  DeviceInfo info_;
  mutable std::mutex kmu_;
  std::unordered_map<std::string, std::shared_ptr<CpuKernelExecutable>> kernels_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace jx
