#pragma once
// Device buffers for the vulkan backend: the memory types chosen once per device, and a pool of
// free buffers by power-of-two size class under a byte budget (Kompute's Manager-owned memory,
// here owned by the BufferPool alone; every buffer is an RAII handle).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/vulkan/vk_context.h"

namespace jx::vk {

struct Buf {
  BufferH buf;
  MemoryH mem;
  std::size_t capacity = 0;
  void* mapped = nullptr;
  std::uint64_t id = 0;  // creation order, never reused (keys of cached descriptor sets)
};

inline std::size_t size_class(std::size_t n) {
  std::size_t c = 256;
  while (c < n) c <<= 1;
  return c;
}

// Whether the device still works, shared by the backend's parts: VK_ERROR_DEVICE_LOST anywhere
// (real, or injected by the vk_device_lost fault) makes the backend unavailable for the rest of
// the process (arrays on it can still be disposed).
struct DeviceHealth {
  bool lost = false;
  std::string reason;  // why the backend is unavailable
  [[noreturn]] void device_lost(const char* what);
};

// Free buffers by size class (capacity), each class's oldest (smallest creation id) first: the
// pool's free lists, and the recorder's buffers freed by submitted work.
class FreeBuffers {
 public:
  void put(std::unique_ptr<Buf> b);
  std::unique_ptr<Buf> take(std::size_t cls);    // the class's oldest, else null
  std::unique_ptr<Buf> take_largest_newest();    // the largest class's newest, else null
  std::vector<std::unique_ptr<Buf>> take_all();  // by class, then oldest first
  bool empty() const { return by_class_.empty(); }
  void clear() { by_class_.clear(); }

 private:
  // size class -> buffers by id; no empty lists
  std::map<std::size_t, std::map<std::uint64_t, std::unique_ptr<Buf>>> by_class_;
};

class BufferPool {
 public:
  // Chooses the memory types: device-local and host-visible memory when a >= 1 GiB heap has it
  // (lavapipe; a GPU's ReBAR heap), else device-local with staging copies; reads through a copy
  // into host-cached memory where mapped memory is not host-cached (write-combined ReBAR).
  BufferPool(std::shared_ptr<Context> ctx, DeviceHealth& health, bool llvmpipe);

  // A buffer of at least n bytes: the oldest pooled one of n's size class (smallest id, so a call
  // that starts from the same pooled set gets the same buffers and its cached descriptor sets
  // match), else a new one. live_bytes only words the out-of-memory error.
  std::unique_ptr<Buf> acquire(std::size_t n, std::size_t live_bytes);
  std::unique_ptr<Buf> take_pooled(std::size_t n);  // the pooled one acquire would give, else null
  // Back to the pool; over the budget, pooled buffers go from the largest class down first.
  void give_back(std::unique_ptr<Buf> b);
  std::unique_ptr<Buf> staging(std::size_t bytes, std::size_t live_bytes);  // host-visible, mapped
  // A host-cached buffer of at least n bytes for staged reads, reused (grows to the largest read).
  Buf& readback(std::size_t n, std::size_t live_bytes);
  void clear();  // every pooled buffer and the readback buffer
  std::size_t pooled_bytes() const { return pooled_bytes_; }
  std::uint64_t created() const { return next_id_; }  // buffers allocated so far, staging included
  // reads memcpy straight from a slot's mapped memory (else through readback())
  bool mapped_reads() const { return mapped_reads_cached_; }

 private:
  std::unique_ptr<Buf> create(std::size_t bytes, std::uint32_t type, bool map_it, std::size_t live_bytes);
  std::shared_ptr<Context> ctx_;
  DeviceHealth& health_;
  bool host_visible_ = true;
  std::uint32_t mem_type_ = 0, staging_type_ = 0, readback_type_ = 0;
  bool mapped_reads_cached_ = true;
  std::unique_ptr<Buf> readback_;
  FreeBuffers free_;
  std::size_t pooled_bytes_ = 0, pool_budget_ = std::size_t{256} << 20;
  std::uint64_t next_id_ = 0;
};

}  // namespace jx::vk
