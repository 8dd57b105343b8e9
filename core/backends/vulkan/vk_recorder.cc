// The vulkan backend's recorder and descriptor cache (vk_recorder.h).
#include "core/backends/vulkan/vk_recorder.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/base/env.h"
#include "core/instrument/faults.h"

namespace jx::vk {

Recorder::Recorder(std::shared_ptr<Context> ctx, DeviceHealth& health, BufferPool& pool, vulkan::Counters& counters)
    : ctx_(ctx), health_(health), pool_(pool), c_(counters), cache_(std::move(ctx), counters) {}

void Recorder::barrier_for(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes, Batch& b) {
  bool need = false;
  for (VkBuffer x : reads) need = need || written_.contains(x);
  for (VkBuffer x : writes) need = need || written_.contains(x) || read_.contains(x);
  if (need) barrier(b);
  for (VkBuffer x : reads) read_.insert(x);
  for (VkBuffer x : writes) written_.insert(x);
}

void Recorder::copy(Batch& b, VkBuffer src, std::size_t src_off, VkBuffer dst, std::size_t dst_off, std::size_t bytes) {
  copy_disjoint(b, {{src, src_off, dst, dst_off, bytes}});
}

void Recorder::copy_disjoint(Batch& b, const std::vector<Region>& rs) {
  std::vector<VkBuffer> reads, writes;
  for (const Region& r : rs)
    if (r.bytes) {
      reads.push_back(r.src);
      writes.push_back(r.dst);
    }
  if (reads.empty()) return;
  barrier_for(reads, writes, b);
  for (const Region& r : rs)
    if (r.bytes) {
      VkBufferCopy c{r.src_off, r.dst_off, r.bytes};
      HostTimer ht(timing_, c_.host_driver_ns);
      vkCmdCopyBuffer(b.cmd, r.src, r.dst, 1, &c);
      b.commands++;
      c_.copies++;
    }
}

void DescriptorCache::write(VkDescriptorSet set, const std::vector<VkBuffer>& bufs, bool timing) {
  std::vector<VkDescriptorBufferInfo> infos(bufs.size());
  std::vector<VkWriteDescriptorSet> writes(bufs.size());
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    infos[i] = {bufs[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                 nullptr,
                 set,
                 static_cast<std::uint32_t>(i),
                 0,
                 1,
                 VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                 nullptr,
                 &infos[i],
                 nullptr};
  }
  HostTimer ht(timing, c_.host_driver_ns);
  vkUpdateDescriptorSets(ctx_->device(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
  c_.descriptor_sets++;
}

VkDescriptorSet Recorder::bind_set(Batch& b, const Pipeline& pipe, const std::vector<VkBuffer>& bufs) {
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = b.dpool.get();
  ai.descriptorSetCount = 1;
  VkDescriptorSetLayout sl = pipe.set_layout.get();
  ai.pSetLayouts = &sl;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(vkAllocateDescriptorSets(ctx_->device(), &ai, &set), "vkAllocateDescriptorSets");
  b.sets++;
  b.descriptors += static_cast<std::uint32_t>(bufs.size());
  cache_.write(set, bufs, timing_);
  return set;
}

VkDescriptorSet Recorder::cached_set(Batch& b, const Pipeline& pipe, const std::vector<const Buf*>& bufs) {
  if (VkDescriptorSet set = cache_.get(pipe, bufs, timing_)) return set;
  std::vector<VkBuffer> handles;
  for (const Buf* x : bufs) handles.push_back(x->buf.get());
  return bind_set(b, pipe, handles);
}

VkDescriptorSet DescriptorCache::get(const Pipeline& pipe, const std::vector<const Buf*>& bufs, bool timing) {
  const VkDescriptorSetLayout layout = pipe.set_layout.get();
  key_.assign(1, reinterpret_cast<std::uint64_t>(layout));
  for (const Buf* x : bufs) key_.push_back(x->id);
  if (auto it = sets_.find(key_); it != sets_.end()) return it->second;
  if (full_) return VK_NULL_HANDLE;
  std::vector<VkBuffer> handles;
  for (const Buf* x : bufs) handles.push_back(x->buf.get());
  VkDevice d = ctx_->device();
  if (!pool_) {
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kCachedDescriptors};
    VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dci.maxSets = kCachedSets;
    dci.poolSizeCount = 1;
    dci.pPoolSizes = &ps;
    VkDescriptorPool dp = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(d, &dci, nullptr, &dp), "vkCreateDescriptorPool");
    pool_ = DescriptorPoolH(d, dp);
  }
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_.get();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (sets_.size() >= kCachedSets ||
      vkAllocateDescriptorSets(d, &ai, &set) != VK_SUCCESS) {  // full: reset at the next host wait
    full_ = true;
    return VK_NULL_HANDLE;
  }
  write(set, handles, timing);
  sets_.emplace(key_, set);
  return set;
}

void DescriptorCache::reset_if_full() {
  if (!full_) return;
  sets_.clear();
  check(vkResetDescriptorPool(ctx_->device(), pool_.get(), 0), "vkResetDescriptorPool");
  full_ = false;
}

void DescriptorCache::clear(bool device_usable) {
  sets_.clear();  // their layouts go with the pipelines; nothing recorded refers to them after finish()
  if (pool_ && device_usable) check(vkResetDescriptorPool(ctx_->device(), pool_.get(), 0), "vkResetDescriptorPool");
  full_ = false;
}

void Recorder::record_dispatch(Batch& b, const Pipeline& pipe, VkDescriptorSet set, std::int64_t invocations,
                               int buffers, std::int64_t workgroup, std::uint32_t depth) {
  if (b.pipes.empty() || b.pipes.back().get() != &pipe) b.pipes.push_back(pipe.shared_from_this());
  auto [gx, gy] = workgroups(invocations, workgroup);
  {
    HostTimer ht(timing_, c_.host_driver_ns);
    vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline.get());
    vkCmdBindDescriptorSets(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout.get(), 0, 1, &set, 0, nullptr);
    vkCmdDispatch(b.cmd, gx, gy, depth);
  }
  time_dispatch(b, pipe, invocations);
  b.commands++;
  c_.dispatches++;
  c_.max_buffers_per_dispatch =
      std::max<std::uint64_t>(c_.max_buffers_per_dispatch, static_cast<std::uint64_t>(buffers));
}

Batch& Recorder::batch_with_room(std::uint32_t sets, std::uint32_t descriptors) {
  Batch* b = &recording();
  if (b->sets + sets > kSetsPerBatch || b->descriptors + descriptors > kDescriptorsPerBatch ||
      (submit_every_ && static_cast<std::uint32_t>(b->commands) >= submit_every_)) {
    submit();
    b = &recording();
  }
  return *b;
}

Batch& Recorder::recording() {
  if (current_) return *current_;
  std::unique_ptr<Batch> b;
  if (!spare_.empty()) {
    b = std::move(spare_.back());
    spare_.pop_back();
  } else {
    b = make_batch();
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(b->cmd, &bi), "vkBeginCommandBuffer");
  time_batch_start(*b);
  current_ = std::move(b);
  return *current_;
}

std::unique_ptr<Batch> Recorder::make_batch() {
  VkDevice d = ctx_->device();
  auto b = std::make_unique<Batch>();
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = ctx_->family();
  VkCommandPool pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(d, &pi, nullptr, &pool), "vkCreateCommandPool");
  b->pool = CommandPoolH(d, pool);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(d, &ai, &b->cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  check(vkCreateFence(d, &fi, nullptr, &f), "vkCreateFence");
  b->fence = FenceH(d, f);
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerBatch};
  VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dci.maxSets = kSetsPerBatch;
  dci.poolSizeCount = 1;
  dci.pPoolSizes = &ps;
  VkDescriptorPool dp = VK_NULL_HANDLE;
  check(vkCreateDescriptorPool(d, &dci, nullptr, &dp), "vkCreateDescriptorPool");
  b->dpool = DescriptorPoolH(d, dp);
  return b;
}

void Recorder::barrier_if(const std::vector<VkBuffer>& bufs, Batch& b) {
  bool need = false;
  for (VkBuffer x : bufs) need = need || written_.contains(x);
  if (need) barrier(b);
}

void Recorder::barrier(Batch& b) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  HostTimer ht(timing_, c_.host_driver_ns);
  vkCmdPipelineBarrier(b.cmd, st, st, 0, 1, &mb, 0, nullptr, 0, nullptr);
  time_barrier(b);
  written_.clear();
  read_.clear();
  c_.barriers++;
}

void Recorder::submit() {
  if (!current_) return;
  HostTimer ht(timing_, c_.host_submit_ns);
  Batch& b = *current_;
  {  // shader and transfer writes (staged reads copy into host memory) become visible to the host
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  check(vkEndCommandBuffer(b.cmd), "vkEndCommandBuffer");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &b.cmd;
  const VkResult r =
      faults::fire("vk_device_lost") ? VK_ERROR_DEVICE_LOST : vkQueueSubmit(ctx_->queue(), 1, &si, b.fence.get());
  if (r == VK_ERROR_DEVICE_LOST) health_.device_lost("vkQueueSubmit");
  check(r, "vkQueueSubmit");
  c_.submits++;
  inflight_.push_back(std::move(current_));
  for (auto& r : inflight_.back()->released) released_.put(std::move(r));
  inflight_.back()->released.clear();
  // written_ and read_ stay: a barrier's first scope is every earlier command in submission
  // order, so the next batch's first reader of these buffers still gets its barrier
}

// Polls the newest fence for up to JX_VK_FENCE_SPIN_US microseconds before the blocking wait, as
// CUDA's default synchronisation spins: a short call's result is then read as soon as the device
// signals, not when the driver wakes the waiting thread (on the H200, m = 2 par filter 0.170 ->
// 0.126 ms a call). Default 300 on a GPU, 0 on a CPU device (lavapipe), whose own threads need the
// core. The newest fence's first scope holds every earlier submission on the queue: it signals last.
void Recorder::spin_on(VkFence f) {
  static const std::int64_t spin_us =
      std::max<std::int64_t>(0, env_int("JX_VK_FENCE_SPIN_US", ctx_->desc().type == "cpu" ? 0 : 300));
  if (spin_us == 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  while (vkGetFenceStatus(ctx_->device(), f) == VK_NOT_READY && std::chrono::steady_clock::now() < until) {}
}

void Recorder::finish() {
  if (health_.lost) return;                   // nothing more reaches a lost device; its batches are dropped at shutdown
  if (current_ && current_->commands == 0) {  // nothing recorded: end it unsubmitted
    check(vkEndCommandBuffer(current_->cmd), "vkEndCommandBuffer");
    recycle(std::move(current_));
  }
  submit();
  if (inflight_.empty()) return;
  std::vector<VkFence> fences;
  for (auto& b : inflight_) fences.push_back(b->fence.get());
  c_.host_waits++;
  VkResult r = VK_SUCCESS;
  {
    HostTimer ht(timing_, c_.host_wait_ns);
    spin_on(inflight_.back()->fence.get());
    r = vkWaitForFences(ctx_->device(), static_cast<std::uint32_t>(fences.size()), fences.data(), VK_TRUE, UINT64_MAX);
  }
  if (faults::fire("vk_device_lost")) r = VK_ERROR_DEVICE_LOST;
  if (r == VK_ERROR_DEVICE_LOST) health_.device_lost("vkWaitForFences");
  check(r, "vkWaitForFences");
  HostTimer ht(timing_, c_.host_retire_ns);
  while (!inflight_.empty()) {
    recycle(std::move(inflight_.front()));
    inflight_.pop_front();
  }
  last_tick_ = 0;
  for (auto& r : released_.take_all()) pool_.give_back(std::move(r));
  waits_++;
  written_.clear();
  read_.clear();
  cache_.reset_if_full();  // nothing recorded refers to the cached sets now
}

void Recorder::flush() {
  if (!health_.lost && current_ && current_->commands) submit();
}

void Recorder::upload(std::unique_ptr<Buf> staging, VkBuffer dst, std::size_t bytes) {
  Batch& b = recording();
  VkBufferCopy c{0, 0, bytes};
  barrier_for({}, {dst}, b);  // WAR too: dst may be a released buffer that earlier commands read
  vkCmdCopyBuffer(b.cmd, staging->buf.get(), dst, 1, &c);
  b.commands++;
  b.staging.push_back(std::move(staging));
}

void Recorder::download(VkBuffer src, Buf& host, std::size_t bytes) {
  Batch& b = recording();
  barrier_if({src}, b);
  VkBufferCopy c{0, 0, bytes};
  vkCmdCopyBuffer(b.cmd, src, host.buf.get(), 1, &c);
  b.commands++;
  finish();  // the copy completes before the host reads
}

void Recorder::fill_zero(Batch& b, const std::shared_ptr<Buf>& buf) {
  barrier_for({}, {buf->buf.get()}, b);
  vkCmdFillBuffer(b.cmd, buf->buf.get(), 0, VK_WHOLE_SIZE, 0);
  b.commands++;
  b.held.push_back(buf);  // the fill may run after the executable is gone
}

void Recorder::release(std::unique_ptr<Buf> b) {
  if (current_ && current_->commands > 0)
    current_->released.push_back(std::move(b));
  else if (!inflight_.empty())
    released_.put(std::move(b));
  else
    pool_.give_back(std::move(b));
}

std::unique_ptr<Buf> Recorder::take_released(std::size_t n) { return released_.take(size_class(n)); }

std::unique_ptr<Buf> Recorder::take_recorded(std::size_t n) {
  if (!current_) return nullptr;
  auto& held = current_->released;
  const std::size_t cls = size_class(n);
  auto it = std::find_if(held.begin(), held.end(), [&](const auto& b) { return b->capacity == cls; });
  if (it == held.end()) return nullptr;
  std::unique_ptr<Buf> b = std::move(*it);
  held.erase(it);
  return b;
}

std::unique_ptr<Buf> Recorder::take_reusable(std::size_t n, bool* reused) {
  std::unique_ptr<Buf> b = take_released(n);
  bool from_work = b != nullptr;
  if (!b) b = pool_.take_pooled(n);
  if (!b && (b = take_recorded(n))) from_work = true;
  if (reused) *reused = from_work;
  return b;
}

void Recorder::recycle(std::unique_ptr<Batch> b) {
  VkDevice d = ctx_->device();
  time_collect(*b);
  for (auto& r : b->released) pool_.give_back(std::move(r));
  b->released.clear();
  b->staging.clear();
  b->held.clear();
  b->pipes.clear();
  VkFence f = b->fence.get();
  check(vkResetFences(d, 1, &f), "vkResetFences");
  check(vkResetCommandPool(d, b->pool.get(), 0), "vkResetCommandPool");
  check(vkResetDescriptorPool(d, b->dpool.get(), 0), "vkResetDescriptorPool");
  b->sets = b->descriptors = 0;
  b->commands = 0;
  spare_.push_back(std::move(b));
}

}  // namespace jx::vk
