#include "core/backends/cpu/cpu_backend.h"

#include <fmt/format.h>
#include <thread>

#include "core/backends/host_memory.h"

namespace jx {
namespace {

struct CpuKernelExecutable final : HostExecutable {
  Kernel k;
  explicit CpuKernelExecutable(Kernel kk) : k(std::move(kk)) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override { cpu_run_kernel(k, in, out[0]); }
};

// The oracle: plain host memory (no pool), every op interpreted.
class CpuBackend final : public Backend {
 public:
  CpuBackend() : mem_("cpu", false) {
    info_.backend = "cpu";
    info_.device = fmt::format("host reference interpreter ({} hardware threads)", std::thread::hardware_concurrency());
    info_.available = true;
    info_.limits = {0, true};
  }

  const DeviceInfo& info() const override { return info_; }
  SlotId malloc(const AVal& tag) override { return mem_.malloc(tag); }
  void incref(SlotId id) override { mem_.incref(id); }
  void decref(SlotId id) override { mem_.decref(id); }
  void read(SlotId id, std::span<std::byte> dst) override { mem_.read(id, dst); }
  void write(SlotId id, std::span<const std::byte> src) override { mem_.write(id, src); }
  std::size_t slot_count() const override { return mem_.slot_count(); }
  std::size_t bytes() const override { return mem_.bytes(); }
  std::vector<SlotInfo> live_slots() const override { return mem_.live_slots(); }

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
    kernels_.emplace(std::move(key), exe);
    return exe;
  }

  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override {
    host_dispatch(mem_, exe, in, out);
  }

 private:
  DeviceInfo info_;
  HostMemory mem_;
  mutable std::mutex kmu_;
  std::unordered_map<std::string, std::shared_ptr<CpuKernelExecutable>> kernels_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace jx
