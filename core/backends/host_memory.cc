#include "core/replay/policy.h"
#include "core/backends/host_memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.h"

namespace jx {
namespace {
std::atomic<SlotId> g_next_slot{1};

std::size_t size_class(std::size_t n) {
  std::size_t c = 64;
  while (c < n) c <<= 1;
  return c;
}

struct HostOpExecutable final : HostExecutable {
  Op op;
  explicit HostOpExecutable(Op o) : op(std::move(o)) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override {
    if (prim_kind(op.prim) == PrimKind::routine)
      cpu_linalg(op, in, out);
    else
      cpu_execute(op, in, out);
  }
};
}  // namespace

std::shared_ptr<HostExecutable> make_host_op_executable(const Op& op) { return std::make_shared<HostOpExecutable>(op); }

HostMemory::HostMemory(std::string owner, bool pooled, std::size_t pool_budget, int idle_ms)
    : owner_(std::move(owner)), pooled_(pooled), budget_(pool_budget), idle_ms_(idle_ms) {}

HostMemory::~HostMemory() {
  for (auto& [_, s] : slots_) free_block(s.block);
  for (auto& [c, v] : free_)
    for (std::byte* p : v) free_block({p, c});
}

// Pooled classes of kArenaClass and up live in the huge-page arena, the rest in malloc's heap.
std::byte* HostMemory::new_block(std::size_t c) {
  if (c >= kArenaClass) return arena_.take(c);
  return static_cast<std::byte*>(std::aligned_alloc(64, c));
}

void HostMemory::free_block(Block b) {
  if (pooled_ && b.capacity >= kArenaClass)
    arena_.give_back(b.ptr, b.capacity);
  else
    std::free(b.ptr);
}

HostMemory::Block HostMemory::acquire(std::size_t n) {
  if (!pooled_) {
    const std::size_t cap = std::max<std::size_t>(64, (n + 63) / 64 * 64);
    return {static_cast<std::byte*>(std::aligned_alloc(64, cap)), cap};
  }
  last_acquire_ = std::chrono::steady_clock::now();
  const std::size_t c = size_class(n);
  auto& list = free_[c];
  if (!list.empty()) {
    std::byte* p = list.back();
    list.pop_back();
    pooled_bytes_ -= c;
    return {p, c};
  }
  return {new_block(c), c};
}

void HostMemory::release(Block b) {
  if (!pooled_) {
    std::free(b.ptr);
    return;
  }
  free_[b.capacity].push_back(b.ptr);
  pooled_bytes_ += b.capacity;
  const auto idle = std::chrono::steady_clock::now() - last_acquire_;
  const std::size_t budget = std::max(budget_, 2 * peak_held_);
  if (idle > std::chrono::milliseconds(idle_ms_))
    shrink(0);
  else if (pooled_bytes_ > budget)
    shrink(budget / 2);
}

void HostMemory::shrink(std::size_t target) {
  if (replay::policy().identity_keyed_unbounded_cache) return;  // replay: memory is never given back
  for (auto it = free_.rbegin(); it != free_.rend() && pooled_bytes_ > target; ++it)
    while (!it->second.empty() && pooled_bytes_ > target) {
      free_block({it->second.back(), it->first});
      it->second.pop_back();
      pooled_bytes_ -= it->first;
    }
}

SlotId new_slot_id() { return g_next_slot++; }

void HostMemory::trim() {
  std::lock_guard lock(mu_);
  shrink(0);
  peak_held_ = held_;  // the budget forgets the peaks before the trim
}

SlotId HostMemory::malloc(const AVal& tag) {
  const std::size_t n = tag.bytes();
  std::lock_guard lock(mu_);
  Block b = acquire(n);
  if (!b.ptr) throw BackendError(fmt::format("{}: out of host memory allocating {} ({} bytes)", owner_, tag.str(), n));
  const SlotId id = new_slot_id();
  slots_.emplace(id, Slot{b, n, tag, 1});
  bytes_ += n;
  peak_ = std::max(peak_, bytes_);
  if (pooled_) peak_held_ = std::max(peak_held_, held_ += b.capacity);
  return id;
}

HostMemory::Slot& HostMemory::get(SlotId id) {
  auto it = slots_.find(id);
  if (it == slots_.end()) throw BackendError(fmt::format("{}: slot {} does not exist (already freed)", owner_, id));
  return it->second;
}

void HostMemory::incref(SlotId id) {
  std::lock_guard lock(mu_);
  get(id).refs++;
}

void HostMemory::decref(SlotId id) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return;  // never throw on a destructor path
  if (--it->second.refs == 0) {
    bytes_ -= it->second.bytes;
    if (pooled_) held_ -= it->second.block.capacity;
    release(it->second.block);
    slots_.erase(it);
  }
}

void HostMemory::read(SlotId id, std::span<std::byte> dst) {
  std::lock_guard lock(mu_);
  auto& s = get(id);
  if (dst.size() != s.bytes)
    throw BackendError(
        fmt::format("{}: read of {} bytes from a slot of {} bytes ({})", owner_, dst.size(), s.bytes, s.tag.str()));
  if (!dst.empty()) std::memcpy(dst.data(), s.block.ptr, dst.size());
}

void HostMemory::write(SlotId id, std::span<const std::byte> src) {
  std::lock_guard lock(mu_);
  auto& s = get(id);
  if (src.size() != s.bytes)
    throw BackendError(
        fmt::format("{}: write of {} bytes from a slot of {} bytes ({})", owner_, src.size(), s.bytes, s.tag.str()));
  if (!src.empty()) std::memcpy(s.block.ptr, src.data(), src.size());
}

std::byte* HostMemory::data(SlotId id) {
  std::lock_guard lock(mu_);
  return get(id).block.ptr;
}

std::size_t HostMemory::slot_count() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

std::size_t HostMemory::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<SlotInfo> HostMemory::live_slots() const {
  std::lock_guard lock(mu_);
  std::vector<SlotInfo> v;
  for (auto& [id, s] : slots_) v.push_back({id, s.bytes, s.tag});
  return v;
}

BackendMemory HostMemory::stats() const {
  std::lock_guard lock(mu_);
  return {slots_.size(), bytes_, peak_, pooled_bytes_, 0, 0};
}

void HostBackend::dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) {
  std::vector<const std::byte*> ip;
  std::vector<std::byte*> op;
  for (auto id : in) ip.push_back(mem_.data(id));
  for (auto id : out) op.push_back(mem_.data(id));
  static_cast<const HostExecutable&>(exe).run(ip, op);
}

}  // namespace jx
