#include "core/backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace jx {
namespace {

struct HostSlot {
  std::unique_ptr<std::byte[]> data;  // operator new[] alignment covers every dtype
  std::size_t bytes;
  AVal tag;
  std::int64_t refs;
};

struct CpuExecutable : Executable {
  virtual void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const = 0;
};
struct CpuOpExecutable final : CpuExecutable {
  Op op;
  explicit CpuOpExecutable(Op o) : op(std::move(o)) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override {
    if (prim_kind(op.prim) == PrimKind::routine) cpu_linalg(op, in, out);
    else cpu_execute(op, in, out);
  }
};
struct CpuKernelExecutable final : CpuExecutable {
  Kernel k;
  explicit CpuKernelExecutable(Kernel kk) : k(std::move(kk)) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override {
    cpu_run_kernel(k, in, out[0]);
  }
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    info_.backend = "cpu";
    info_.device = fmt::format("host reference interpreter ({} hardware threads)", std::thread::hardware_concurrency());
    info_.available = true;
    info_.limits = {0, true};
  }

  const DeviceInfo& info() const override { return info_; }

  SlotId malloc(const AVal& tag) override {
    std::lock_guard lock(mu_);
    const SlotId id = next_++;
    const std::size_t n = tag.bytes();
    slots_.emplace(id, HostSlot{std::unique_ptr<std::byte[]>(new std::byte[n ? n : 1]), n, tag, 1});
    bytes_ += n;
    peak_ = std::max(peak_, bytes_);
    return id;
  }

  void incref(SlotId id) override {
    std::lock_guard lock(mu_);
    get(id).refs++;
  }

  void decref(SlotId id) override {
    std::lock_guard lock(mu_);
    auto it = slots_.find(id);
    if (it == slots_.end()) return;  // never throw from a destructor path; see slot_count checks
    if (--it->second.refs == 0) {
      bytes_ -= it->second.bytes;
      slots_.erase(it);
    }
  }

  void read(SlotId id, std::span<std::byte> dst) override {
    std::lock_guard lock(mu_);
    auto& s = get(id);
    check_size(s, dst.size(), "read");
    if (!dst.empty()) std::memcpy(dst.data(), s.data.get(), dst.size());
  }

  void write(SlotId id, std::span<const std::byte> src) override {
    std::lock_guard lock(mu_);
    auto& s = get(id);
    check_size(s, src.size(), "write");
    if (!src.empty()) std::memcpy(s.data.get(), src.data(), src.size());
  }

  std::size_t slot_count() const override {
    std::lock_guard lock(mu_);
    return slots_.size();
  }

  std::size_t bytes() const override {
    std::lock_guard lock(mu_);
    return bytes_;
  }

  std::vector<SlotInfo> live_slots() const override {
    std::lock_guard lock(mu_);
    std::vector<SlotInfo> v;
    for (auto& [id, s] : slots_) v.push_back({id, s.bytes, s.tag});
    return v;
  }

  BackendMemory memory() const override {
    std::lock_guard lock(mu_);
    std::lock_guard klock(kmu_);
    return {slots_.size(), bytes_, peak_, 0, kernels_.size(), 0};
  }

  void clear_caches() override {
    std::lock_guard klock(kmu_);
    kernels_.clear();
  }

  std::shared_ptr<Executable> prepare(const Op& op) override { return std::make_shared<CpuOpExecutable>(op); }

  // The cpu backend compiles nothing; its "compiled kernel" is the validated IR, cached by key.
  std::shared_ptr<Executable> prepare_kernel(const Kernel& k) override {
    std::lock_guard klock(kmu_);
    auto key = k.key();
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    auto exe = std::make_shared<CpuKernelExecutable>(k);
    kernels_.emplace(std::move(key), exe);
    return exe;
  }

  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override {
    std::vector<const std::byte*> ip;
    std::vector<std::byte*> op_;
    {
      std::lock_guard lock(mu_);
      for (auto id : in) ip.push_back(get(id).data.get());
      for (auto id : out) op_.push_back(get(id).data.get());
    }
    static_cast<const CpuExecutable&>(exe).run(ip, op_);
  }

 private:
  HostSlot& get(SlotId id) {
    auto it = slots_.find(id);
    if (it == slots_.end()) throw BackendError(fmt::format("cpu: slot {} does not exist (already freed)", id));
    return it->second;
  }
  static void check_size(const HostSlot& s, std::size_t n, const char* what) {
    if (n != s.bytes)
      throw BackendError(fmt::format("cpu: {} of {} bytes from a slot of {} bytes ({})", what, n, s.bytes, s.tag.str()));
  }

  DeviceInfo info_;
  mutable std::mutex mu_;
  std::unordered_map<SlotId, HostSlot> slots_;
  SlotId next_ = 1;
  std::size_t bytes_ = 0, peak_ = 0;
  mutable std::mutex kmu_;
  std::unordered_map<std::string, std::shared_ptr<CpuKernelExecutable>> kernels_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace jx
