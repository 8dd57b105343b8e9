// GPU timing of the vulkan backend: timestamp queries around the dispatches of each batch, read
// back once the batch's fence has signalled (no extra host waits).
#include "core/base/env.h"
#include "core/backends/vulkan/vulkan_backend_impl.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace jx::vk {

namespace {
constexpr std::uint32_t kTimestamps = 4096;  // per batch; dispatches beyond it go untimed
constexpr const char* kIdle = "(idle between batches)";
}  // namespace

void Recorder::time_batch_start(Batch& b) {
  b.timed.clear();
  if (!timing_ || ctx_->desc().timestamp_ns <= 0) return;
  if (!b.timestamps) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kTimestamps;
    VkQueryPool q = VK_NULL_HANDLE;
    check(vkCreateQueryPool(ctx_->device(), &qi, nullptr, &q), "vkCreateQueryPool");
    b.timestamps = QueryPoolH(ctx_->device(), q);
  }
  vkCmdResetQueryPool(b.cmd, b.timestamps.get(), 0, kTimestamps);
  vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, b.timestamps.get(), 0);
  b.timed.emplace_back();
}

void Recorder::time_dispatch(Batch& b, const Pipeline& pipe, std::int64_t invocations) {
  if (b.timed.empty() || b.timed.size() >= kTimestamps) return;
  vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, b.timestamps.get(),
                      static_cast<std::uint32_t>(b.timed.size()));
  b.timed.push_back(
      fmt::format("{} [{}]{}", pipe.name, invocations, pipe.stats.empty() ? "" : " {" + pipe.stats + "}"));
}

// JX_VK_TIMING_BARRIERS=1 (a diagnosis): a timestamp right after every barrier too, so a
// dispatch's gap splits into the barrier's wait ("(barrier after) <the dispatch before>") and the
// dispatch itself, and copies show ("(copies, then a barrier)": buffer copies between two barriers)
void Recorder::time_barrier(Batch& b) {
  static const bool on = env_is_on("JX_VK_TIMING_BARRIERS");
  if (!on || b.timed.empty() || b.timed.size() >= kTimestamps) return;
  vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, b.timestamps.get(),
                      static_cast<std::uint32_t>(b.timed.size()));
  const std::string& last = b.timed.back();  // "" (the batch's start), a dispatch, or a barrier: copies since
  b.timed.push_back(last.empty()     ? "(barrier at the batch's start)"
                    : last[0] == '(' ? "(copies, then a barrier)"
                                     : "(barrier after) " + last);
}

void Recorder::time_collect(Batch& b) {
  const auto n = static_cast<std::uint32_t>(b.timed.size());
  if (n >= 2 && !health_.lost) {
    std::vector<std::uint64_t> ts(n);
    const VkResult r = vkGetQueryPoolResults(ctx_->device(), b.timestamps.get(), 0, n, n * sizeof(std::uint64_t),
                                             ts.data(), sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT);
    if (r == VK_SUCCESS) {
      const double ms_per_tick = static_cast<double>(ctx_->desc().timestamp_ns) * 1e-6;
      // the device idle between two batches of one host wait (submitted late, or queued behind
      // the submit): not a pipeline's time
      if (last_tick_ && ts[0] > last_tick_) {
        auto& e = timings_[kIdle];
        e.name = kIdle;
        e.idle = true;
        e.dispatches++;
        e.ms += static_cast<double>(ts[0] - last_tick_) * ms_per_tick;
      }
      last_tick_ = ts[n - 1];
      for (std::uint32_t i = 1; i < n; ++i) {
        auto& e = timings_[b.timed[i]];
        e.name = b.timed[i];
        e.dispatches++;
        e.ms += static_cast<double>(ts[i] - ts[i - 1]) * ms_per_tick;
      }
    }
  }
  b.timed.clear();
}

std::vector<vulkan::TimedPipeline> Recorder::timings() const {
  std::vector<vulkan::TimedPipeline> out;
  for (const auto& [name, e] : timings_) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace jx::vk

namespace jx::vulkan {

void set_timing(bool on) { vk::instance()->set_timing(on); }
std::vector<TimedPipeline> timings() { return vk::instance()->timings(); }
void reset_timings() { vk::instance()->reset_timings(); }

}  // namespace jx::vulkan
