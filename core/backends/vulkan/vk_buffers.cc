#include "core/base/env.h"
#include "core/backends/vulkan/vk_buffers.h"

#include <fmt/format.h>

#include "core/base/errors.h"
#include "core/instrument/faults.h"

namespace jx::vk {

void DeviceHealth::device_lost(const char* what) {
  lost = true;
  reason =
      fmt::format("the device was lost (VK_ERROR_DEVICE_LOST from {}); restart the process to use vulkan again", what);
  throw BackendError(fmt::format(
      "vulkan: device lost: {} failed with VK_ERROR_DEVICE_LOST; the vulkan backend is unavailable for the rest "
      "of this process (arrays on it can only be disposed; other backends are unaffected)",
      what));
}

BufferPool::BufferPool(std::shared_ptr<Context> ctx, DeviceHealth& health, bool llvmpipe)
    : ctx_(std::move(ctx)), health_(health) {
  const auto& mp = ctx_->memory_properties();
  const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int dl = -1, mapped = -1, staging = -1, cached = -1;
  for (std::uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const auto f = mp.memoryTypes[i].propertyFlags;
    const auto heap = mp.memoryHeaps[mp.memoryTypes[i].heapIndex].size;
    if ((f & want) == want && heap >= (std::uint64_t{1} << 30) && mapped < 0) mapped = static_cast<int>(i);
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dl < 0) dl = static_cast<int>(i);
    if ((f & host) == host && staging < 0) staging = static_cast<int>(i);
    if ((f & (host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) == (host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT) && cached < 0)
      cached = static_cast<int>(i);
  }
  if (mapped >= 0) {
    host_visible_ = true;
    mem_type_ = static_cast<std::uint32_t>(mapped);
  } else if (dl >= 0 && staging >= 0) {
    host_visible_ = false;
    mem_type_ = static_cast<std::uint32_t>(dl);
  } else if (staging >= 0) {
    host_visible_ = true;
    mem_type_ = static_cast<std::uint32_t>(staging);
  } else {
    throw BackendError("vulkan: no usable memory type for storage buffers");
  }
  staging_type_ = static_cast<std::uint32_t>(staging);
  // pooled free buffers: 1/16 of a GPU's heap (at least 256 MiB); 256 MiB where device memory
  // is the process's own (llvmpipe), so RSS stays bounded by what programs hold
  if (!llvmpipe)
    pool_budget_ = std::max<std::size_t>(
        pool_budget_, static_cast<std::size_t>(mp.memoryHeaps[mp.memoryTypes[mem_type_].heapIndex].size / 16));
  readback_type_ = static_cast<std::uint32_t>(cached >= 0 ? cached : staging);
  mapped_reads_cached_ =
      (mp.memoryTypes[mem_type_].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0 || cached < 0;
  // test switch: the staged read path on a device whose memory is all host-cached (lavapipe)
  if (env_is_on("JX_VULKAN_STAGED_READS")) mapped_reads_cached_ = false;
}

std::unique_ptr<Buf> BufferPool::create(std::size_t bytes, std::uint32_t type, bool map_it, std::size_t live_bytes) {
  VkDevice d = ctx_->device();
  auto b = std::make_unique<Buf>();
  b->capacity = bytes;
  b->id = ++next_id_;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buf = VK_NULL_HANDLE;
  check(vkCreateBuffer(d, &bi, nullptr, &buf), "vkCreateBuffer");
  b->buf = BufferH(d, buf);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, buf, &req);
  if (!(req.memoryTypeBits & (1u << type)))
    throw BackendError("vulkan: the chosen memory type cannot back storage buffers");
  VkMemoryAllocateInfo mi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mi.allocationSize = req.size;
  mi.memoryTypeIndex = type;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  // an injected out-of-memory fault fails this allocation, retry included
  const bool injected = faults::fire("vk_out_of_device_memory");
  VkResult r = injected ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d, &mi, nullptr, &mem);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {  // give the pool back and retry once
    free_.clear();
    pooled_bytes_ = 0;
    if (!injected) r = vkAllocateMemory(d, &mi, nullptr, &mem);
  }
  if (r == VK_ERROR_DEVICE_LOST) health_.device_lost("vkAllocateMemory");
  if (r != VK_SUCCESS)
    throw BackendError(fmt::format("vulkan: out of device memory allocating {} bytes ({}; {} bytes live)", bytes,
                                   result_name(r), live_bytes));
  b->mem = MemoryH(d, mem);
  check(vkBindBufferMemory(d, buf, mem, 0), "vkBindBufferMemory");
  if (map_it || (type == mem_type_ && host_visible_))
    check(vkMapMemory(d, mem, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
  return b;
}

void FreeBuffers::put(std::unique_ptr<Buf> b) {
  const std::size_t cls = b->capacity;
  const std::uint64_t id = b->id;
  by_class_[cls].emplace(id, std::move(b));
}

std::unique_ptr<Buf> FreeBuffers::take(std::size_t cls) {
  auto it = by_class_.find(cls);
  if (it == by_class_.end()) return nullptr;
  auto oldest = it->second.begin();
  std::unique_ptr<Buf> b = std::move(oldest->second);
  it->second.erase(oldest);
  if (it->second.empty()) by_class_.erase(it);
  return b;
}

std::unique_ptr<Buf> FreeBuffers::take_largest_newest() {
  if (by_class_.empty()) return nullptr;
  auto last = std::prev(by_class_.end());
  auto newest = std::prev(last->second.end());
  std::unique_ptr<Buf> b = std::move(newest->second);
  last->second.erase(newest);
  if (last->second.empty()) by_class_.erase(last);
  return b;
}

std::vector<std::unique_ptr<Buf>> FreeBuffers::take_all() {
  std::vector<std::unique_ptr<Buf>> all;
  for (auto& [cls, bufs] : by_class_)
    for (auto& [id, b] : bufs) all.push_back(std::move(b));
  by_class_.clear();
  return all;
}

std::unique_ptr<Buf> BufferPool::take_pooled(std::size_t n) {
  const std::size_t cls = size_class(n);
  std::unique_ptr<Buf> b = free_.take(cls);
  if (b) pooled_bytes_ -= cls;
  return b;
}

std::unique_ptr<Buf> BufferPool::acquire(std::size_t n, std::size_t live_bytes) {
  if (std::unique_ptr<Buf> b = take_pooled(n)) return b;
  return create(size_class(n), mem_type_, false, live_bytes);
}

// Over the budget, free pooled buffers from the largest size class down until this one fits
// (clearing the whole pool instead made programs whose live set exceeds the budget allocate
// afresh at every step: the H100 gradient at N = 102400 spent 0.65 s per call in vkAllocateMemory).
void BufferPool::give_back(std::unique_ptr<Buf> b) {
  while (pooled_bytes_ + b->capacity > pool_budget_ && !free_.empty())
    pooled_bytes_ -= free_.take_largest_newest()->capacity;
  if (b->capacity > pool_budget_) return;
  pooled_bytes_ += b->capacity;
  free_.put(std::move(b));
}

std::unique_ptr<Buf> BufferPool::staging(std::size_t bytes, std::size_t live_bytes) {
  return create(bytes, staging_type_, true, live_bytes);
}

Buf& BufferPool::readback(std::size_t n, std::size_t live_bytes) {
  if (!readback_ || readback_->capacity < n) {
    readback_.reset();
    readback_ = create(size_class(n), readback_type_, true, live_bytes);
  }
  return *readback_;
}

void BufferPool::clear() {
  free_.clear();
  readback_.reset();
  pooled_bytes_ = 0;
}

}  // namespace jx::vk
