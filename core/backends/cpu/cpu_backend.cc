#include "core/backends/cpu/cpu_backend.h"

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
  Op op;
  explicit CpuExecutable(Op o) : op(std::move(o)) {}
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

  std::unique_ptr<Executable> prepare(const Op& op) override { return std::make_unique<CpuExecutable>(op); }

  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override {
    const Op& op = static_cast<CpuExecutable&>(exe).op;
    std::vector<const std::byte*> ip;
    std::vector<std::byte*> op_;
    {
      std::lock_guard lock(mu_);
      for (auto id : in) ip.push_back(get(id).data.get());
      for (auto id : out) op_.push_back(get(id).data.get());
    }
    if (prim_kind(op.prim) == PrimKind::routine) cpu_linalg(op, ip, op_);
    else cpu_execute(op, ip, op_);
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
  std::size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace jx
