#pragma once
// The vulkan backend's recorder (Kompute's Sequence): commands recorded into one command buffer
// per batch, with a barrier only before a command that reads or rewrites a buffer written since
// the last barrier (or overwrites one an earlier command may still read); a batch is submitted
// when the host reads (then waits), when its descriptor pool is full, once it holds
// submit_every commands, or on flush(). Per-batch descriptor sets come from the batch's pool;
// sets reused across batches from the DescriptorCache. GPU timing by timestamp queries.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backends/backend.h"
#include "core/base/hash.h"
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/vk_buffers.h"
#include "core/backends/vulkan/vk_pipeline.h"
#include "core/backends/vulkan/vulkan.h"

namespace jx::vk {

constexpr std::uint32_t kSetsPerBatch = 512;
constexpr std::uint32_t kDescriptorsPerBatch = 8192;
constexpr std::uint32_t kCachedSets = 4096, kCachedDescriptors = 65536;  // DescriptorCache's pool

// Adds the host time of a scope to a counter while timing is on (a no-op otherwise).
class HostTimer {
 public:
  HostTimer(bool on, std::uint64_t& ns)
      : ns_(on ? &ns : nullptr), t0_(on ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~HostTimer() {
    if (ns_)
      *ns_ += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }
  HostTimer(const HostTimer&) = delete;
  HostTimer& operator=(const HostTimer&) = delete;

 private:
  std::uint64_t* ns_;
  std::chrono::steady_clock::time_point t0_;
};

struct Batch {
  CommandPoolH pool;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  FenceH fence;
  DescriptorPoolH dpool;
  std::uint32_t sets = 0, descriptors = 0;
  int commands = 0;
  std::vector<std::unique_ptr<Buf>> released;          // back to the pool once the batch completed
  std::vector<std::unique_ptr<Buf>> staging;           // destroyed once the batch completed
  std::vector<std::shared_ptr<Buf>> held;              // executables' scratch buffers used by this batch
  std::vector<std::shared_ptr<const Pipeline>> pipes;  // every pipeline a command binds
  QueryPoolH timestamps;                               // created on first use while timing is on
  std::vector<std::string> timed;  // label of timestamp i (0: the start of the batch); empty: untimed
};

// Descriptor sets that outlive their batch, for the same pipeline layout over the same buffers (a
// jit program's kernels over its pooled buffers, call after call): keyed by the buffers' creation
// ids, so a destroyed buffer's sets are never hit again. When the pool fills, get() answers null
// (the recorder then uses a per-batch set) until reset_if_full() at the next host wait.
class DescriptorCache {
 public:
  DescriptorCache(std::shared_ptr<Context> ctx, vulkan::Counters& counters) : ctx_(std::move(ctx)), c_(counters) {}
  VkDescriptorSet get(const Pipeline& pipe, const std::vector<const Buf*>& bufs, bool timing);
  void reset_if_full();  // only when nothing recorded refers to the cached sets
  void clear(bool device_usable);
  // binding i of set = the whole of bufs[i]
  void write(VkDescriptorSet set, const std::vector<VkBuffer>& bufs, bool timing);

 private:
  std::shared_ptr<Context> ctx_;
  vulkan::Counters& c_;
  DescriptorPoolH pool_;
  bool full_ = false;
  // the layout's handle, then the buffers' creation ids
  struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& k) const noexcept {
      return static_cast<std::size_t>(
          fnv1a(std::string_view(reinterpret_cast<const char*>(k.data()), k.size() * sizeof(std::uint64_t))));
    }
  };
  std::unordered_map<std::vector<std::uint64_t>, VkDescriptorSet, KeyHash> sets_;
  std::vector<std::uint64_t> key_;  // get()'s key, reused: a hit allocates nothing
};

// The buffers read or written since the last barrier: a handful, so a flat vector searched in
// order (a hash set allocated a node per insert and freed them all at every barrier).
class BufferSet {
 public:
  bool contains(VkBuffer b) const { return std::find(v_.begin(), v_.end(), b) != v_.end(); }
  void insert(VkBuffer b) {
    if (!contains(b)) v_.push_back(b);
  }
  void clear() { v_.clear(); }  // keeps the capacity

 private:
  std::vector<VkBuffer> v_;
};

class Recorder {
 public:
  Recorder(std::shared_ptr<Context> ctx, DeviceHealth& health, BufferPool& pool, vulkan::Counters& counters);

  Batch& recording();
  // the recording batch, submitted first (no wait) when it lacks room for `sets` per-batch sets
  // and `descriptors` descriptors, or has reached submit_every commands
  Batch& batch_with_room(std::uint32_t sets, std::uint32_t descriptors);
  // A barrier before a command that reads `reads` and writes `writes` when it would see a write
  // not yet made visible (RAW, WAW) or overwrite what an earlier command may still read (WAR).
  void barrier_for(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes, Batch& b);
  void barrier_if(const std::vector<VkBuffer>& bufs, Batch& b);  // RAW/WAW on bufs
  struct Region {
    VkBuffer src;
    std::size_t src_off;
    VkBuffer dst;
    std::size_t dst_off, bytes;
  };
  void copy(Batch& b, VkBuffer src, std::size_t src_off, VkBuffer dst, std::size_t dst_off, std::size_t bytes);
  // copies into disjoint destination regions (packing operands, unpacking results): one barrier
  // check for all of them, none between them
  void copy_disjoint(Batch& b, const std::vector<Region>& rs);
  VkDescriptorSet bind_set(Batch& b, const Pipeline& pipe, const std::vector<VkBuffer>& bufs);  // this batch's
  VkDescriptorSet cached_set(Batch& b, const Pipeline& pipe, const std::vector<const Buf*>& bufs);
  // invocations in workgroups of `workgroup` (the shader's local_size_x), `depth` times over
  // (gl_WorkGroupID.z: a series of a vmapped associative scan)
  void record_dispatch(Batch& b, const Pipeline& pipe, VkDescriptorSet set, std::int64_t invocations, int buffers,
                       std::int64_t workgroup = kWorkgroup, std::uint32_t depth = 1);
  // staging's bytes into dst (the staging buffer is freed once the batch completed)
  void upload(std::unique_ptr<Buf> staging, VkBuffer dst, std::size_t bytes);
  // src's bytes into host (host-visible), then the host waits for it
  void download(VkBuffer src, Buf& host, std::size_t bytes);
  void fill_zero(Batch& b, const std::shared_ptr<Buf>& buf);  // held by the batch until it completes

  // A freed slot's buffer. Stream-ordered reuse: once every command that may use it is
  // submitted, later commands may take it (take_released) — the queue runs commands in submission
  // order and barrier_for orders a new write after the old reads and writes (RAW, WAW, WAR). The
  // host must not touch it before the next host wait (waits()); at that wait it goes to the pool.
  // A buffer used by the recording batch is held by that batch until it is submitted.
  void release(std::unique_ptr<Buf> b);
  // A buffer of n's size class freed since the last host wait (the oldest first, so a host loop's
  // steps take the same buffers and hit the same cached descriptor sets), else null.
  std::unique_ptr<Buf> take_released(std::size_t n);
  // A buffer of n's size class the recording batch released (the oldest), else null: stream-
  // ordered reuse within the batch, as take_released across batches. The last resort before a
  // new buffer: a write into it needs a barrier after its earlier readers (WAR), where a fresh
  // buffer needs none (a host loop whose steps are recorded into one batch otherwise makes new
  // buffers until the batch is submitted).
  std::unique_ptr<Buf> take_recorded(std::size_t n);
  // A buffer of n's size class without making one: released by submitted work, else pooled, else
  // released by the recording batch (`reused`: taken from work that may still use it), else null.
  std::unique_ptr<Buf> take_reusable(std::size_t n, bool* reused = nullptr);
  std::uint64_t waits() const { return waits_; }  // host waits so far (finish() that waited)

  void submit();  // ends and submits the recording batch (no wait)
  void flush();   // submit, if anything is recorded
  // Submits what is recorded and waits for everything in flight; recycles the batches. A no-op
  // once the device is lost.
  void finish();
  DescriptorCache& descriptors() { return cache_; }

  // host and GPU timing (JX_VK_TIMING)
  bool timing() const { return timing_; }
  void set_timing(bool on) { timing_ = on; }
  std::vector<vulkan::TimedPipeline> timings() const;
  void reset_timings() { timings_.clear(); }
  void set_submit_every(std::uint32_t n) { submit_every_ = n; }

 private:
  std::unique_ptr<Batch> make_batch();
  void barrier(Batch& b);
  void spin_on(VkFence f);  // polls f for a bounded time before a blocking wait
  void recycle(std::unique_ptr<Batch> b);
  // vk_timing.cc: a timestamp at the start of each batch and after every dispatch; a dispatch's
  // GPU time is the gap since the previous timestamp.
  void time_batch_start(Batch& b);
  void time_dispatch(Batch& b, const Pipeline& pipe, std::int64_t invocations);
  void time_collect(Batch& b);  // after the batch's fence: adds its gaps to timings_
  void time_barrier(Batch& b);  // a timestamp after a barrier (JX_VK_TIMING_BARRIERS=1)

  std::shared_ptr<Context> ctx_;
  DeviceHealth& health_;
  BufferPool& pool_;
  vulkan::Counters& c_;
  DescriptorCache cache_;
  std::unique_ptr<Batch> current_;
  std::deque<std::unique_ptr<Batch>> inflight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  BufferSet written_;
  BufferSet read_;        // read since the last barrier (scans rewrite buffers they read)
  FreeBuffers released_;  // freed by submitted work since the last host wait
  std::uint64_t waits_ = 0;
  bool timing_ = false;
  // A recording batch is submitted (no wait) once it holds this many commands, so the device
  // starts on a long call's first commands while the host records the rest
  // (JX_VK_SUBMIT_EVERY; 0: only when a batch is full or at a host wait).
  std::uint32_t submit_every_ = 64;
  std::map<std::string, vulkan::TimedPipeline> timings_;
  std::uint64_t last_tick_ = 0;  // the last timestamp of the batch retired before, in this host wait; 0: none
};

}  // namespace jx::vk
