#pragma once
// The vulkan backend's public controls and counters (the backend itself is reached through the
// registry as "vulkan").
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/backend.h"

namespace jx {

std::unique_ptr<Backend> make_vulkan_backend();

namespace vulkan {

struct Counters {
  std::uint64_t dispatches = 0, submits = 0, host_waits = 0, barriers = 0, pipeline_creations = 0;
  std::uint64_t bytes_uploaded = 0, bytes_downloaded = 0, host_routines = 0;
  std::uint64_t max_buffers_per_dispatch = 0;
  std::uint64_t copies = 0;           // buffer-to-buffer copies recorded (scan operands packed, x slices)
  std::uint64_t descriptor_sets = 0;  // written (a cached set reused by a later call is not)
  std::uint64_t buffers_created = 0;  // device buffers allocated (not taken from the pool or reused)
  // host time while timing is on (JX_VK_TIMING=1), in ns: inside dispatch (recording a command,
  // all included), in the driver's recording calls (vkCmd*, descriptor set writes), ending and
  // submitting batches, and taking or releasing buffers (malloc, decref); blocked in
  // vkWaitForFences, and retiring the waited batches (recycling them, returning their buffers)
  std::uint64_t host_dispatch_ns = 0, host_driver_ns = 0, host_submit_ns = 0, host_alloc_ns = 0;
  std::uint64_t host_wait_ns = 0, host_retire_ns = 0;
};
Counters counters();
void reset_counters();

// GPU time per pipeline and size ("name [invocations]", then " {statistics}" where
// pipeline_statistics()) while timing is on (set_timing(true), or
// JX_VK_TIMING=1 at start): a timestamp is written after every dispatch, and a dispatch's time is
// the gap since the previous timestamp of its command buffer (copies and barrier waits before it
// included). Sorted by time, descending; empty where the compute queue has no timestamps.
struct TimedPipeline {
  std::string name;
  std::uint64_t dispatches = 0;
  double ms = 0;
  bool idle = false;  // "(idle between batches)": the device idle between two batches of one host wait
};
void set_timing(bool on);
std::vector<TimedPipeline> timings();
void reset_timings();

// Limits profiles: "webgpu" (default; WebGPU's defaults: 8 storage buffers per stage, 256
// invocations per workgroup, 16384 bytes of workgroup storage) or "device" (the device's own).
// JX_LIMITS sets the initial profile. Throws BackendError for another name.
void set_limits(const std::string& profile);
std::string limits();
// Whether scan shaders bounds-check workgroup memory (out-of-bounds reads give all-ones words,
// writes are dropped): on by default on llvmpipe, where such accesses otherwise go unseen;
// JX_VK_CHECK_SHARED=0|1 at start overrides. Throws BackendError when vulkan is unavailable.
bool checked_shared();
// Whether pipelines capture the driver's statistics of their compiled code: JX_VK_PIPELINE_STATS=1
// at start, on a driver with VK_KHR_pipeline_executable_properties (else a note on stderr says it
// has none). Then every timing's name ends in " {stat value, ...}" (NVIDIA: "Register Count",
// ...), so JX_VK_TIMING shows each pipeline's registers beside its time. Throws BackendError when
// vulkan is unavailable.
bool pipeline_statistics();

// Submits recorded work and waits for it (the host normally waits only when it reads data);
// nothing to do when the backend never started or was shut down.
void synchronize();
// (Teardown: jx::shutdown() / jx::ShutdownAtExit in core/jit/jit.h drop the compiled
// programs, then shut this backend down: submit, wait, destroy every Vulkan object.)
// Validation messages (JX_VULKAN_VALIDATION=1 enables VK_LAYER_KHRONOS_validation).
std::size_t validation_message_count();
std::vector<std::string> validation_messages();

// Every physical device: "index name (type, driver) limits" lines for `jxlab devices`.
std::vector<std::string> describe_devices();

}  // namespace vulkan
}  // namespace jx
