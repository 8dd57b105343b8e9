#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backends/backend.h"
#include "core/backends/huge_arena.h"

namespace jx {

// Refcounted slots in host memory, shared by the host backends (cpu, native). Slot ids come
// from one process-wide counter, so ids of different backends never collide.
//
// Pooled mode: blocks come in power-of-two size classes (>= 64 bytes, 64-byte aligned); a freed
// slot's block goes back to its class's free list for reuse. Free blocks are returned to the
// system when the pool holds more than its budget (largest classes first, down to half the
// budget), when a block is freed after the pool has been idle (no allocation for `idle_ms`), and
// all of them on trim(). The budget is `pool_budget` or twice the most block bytes ever live at
// once, whichever is larger: a program that needed that much needs it again on its next call,
// and a free block serves only its own class, so a call that frees one class while allocating
// another holds up to about twice its peak. Giving blocks back below that makes every call fault
// fresh pages in (at N = 102400 the native forward-mode Kalman gradient took 1.6–2× as long,
// with 4× the page faults). Memory stays bounded by a multiple of the peak the program reached.
// Classes of 64 KB and up come from a HugeArena (transparent huge pages); a block given back to
// the system there returns its pages and keeps its addresses for the arena's next block of that
// size.
class HostMemory {
 public:
  HostMemory(std::string owner, bool pooled, std::size_t pool_budget = std::size_t{64} << 20, int idle_ms = 1000);
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  SlotId malloc(const AVal& tag);
  void incref(SlotId id);
  void decref(SlotId id);
  void read(SlotId id, std::span<std::byte> dst);
  void write(SlotId id, std::span<const std::byte> src);
  std::byte* data(SlotId id);  // stable while the slot lives
  std::size_t slot_count() const;
  std::size_t bytes() const;
  std::vector<SlotInfo> live_slots() const;
  BackendMemory stats() const;  // compiled_kernels / pipelines left 0
  void trim();

 private:
  struct Block {
    std::byte* ptr;
    std::size_t capacity;
  };
  struct Slot {
    Block block;
    std::size_t bytes;
    AVal tag;
    std::int64_t refs;
  };
  Slot& get(SlotId id);
  Block acquire(std::size_t bytes);
  void release(Block b);
  void shrink(std::size_t target);
  std::byte* new_block(std::size_t capacity);
  void free_block(Block b);
  static constexpr std::size_t kArenaClass = std::size_t{64} << 10;

  std::string owner_;
  bool pooled_;
  std::size_t budget_;
  mutable std::mutex mu_;
  std::unordered_map<SlotId, Slot> slots_;
  std::map<std::size_t, std::vector<std::byte*>> free_;  // size class -> free blocks
  HugeArena arena_;
  std::size_t bytes_ = 0, peak_ = 0, pooled_bytes_ = 0;
  std::size_t held_ = 0, peak_held_ = 0;  // capacity of the live slots' blocks, and its maximum
  int idle_ms_;
  std::chrono::steady_clock::time_point last_acquire_ = std::chrono::steady_clock::now();
};

// An executable that runs on host pointers (both host backends' dispatch calls run()).
class HostExecutable : public Executable {
 public:
  virtual void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const = 0;
};

// The slot half of a backend living in host memory; cpu and native add execution.
class HostBackend : public Backend {
 public:
  HostBackend(const std::string& name, bool pooled) : mem_(name, pooled) {}
  SlotId malloc(const AVal& tag) override { return mem_.malloc(tag); }
  void incref(SlotId id) override { mem_.incref(id); }
  void decref(SlotId id) override { mem_.decref(id); }
  void read(SlotId id, std::span<std::byte> dst) override { mem_.read(id, dst); }
  void write(SlotId id, std::span<const std::byte> src) override { mem_.write(id, src); }
  const std::byte* host_data(SlotId id) override { return mem_.data(id); }
  std::size_t slot_count() const override { return mem_.slot_count(); }
  std::size_t bytes() const override { return mem_.bytes(); }
  std::vector<SlotInfo> live_slots() const override { return mem_.live_slots(); }
  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override;

 protected:
  HostMemory mem_;
};

// Host implementations of single primitives (the cpu interpreter and its routines).
std::shared_ptr<HostExecutable> make_host_op_executable(const Op& op);

}  // namespace jx
