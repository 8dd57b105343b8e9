#pragma once
// The vulkan backend's executables (Kompute's Algorithm: a pipeline and how to dispatch it) and its
// scan runner: the planner of lax.scan (fused loop shader, else preencoded, else fallback) and of
// associative_scan (blocked, cooperative or Kogge-Stone), with the plans it made, and the
// recording of each scan executable's dispatches.
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backends/backend.h"
#include "core/backends/host_memory.h"
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/vk_recorder.h"

namespace jx::vk {

struct KernelExe final : Executable {
  std::shared_ptr<Pipeline> pipe;  // holds the device: declared before scratch, destroyed after it
  std::int64_t invocations = 0;
  int buffers = 0;
  std::shared_ptr<Buf> scratch;  // Shader::scratch_bytes (bound last); batches using it hold it too
};

// A split reduction's scratch buffer is bound after the kernel's own buffers (appended to
// `bufs`), and the batch holds it until it completes.
inline void bind_scratch(Batch& b, const KernelExe& k, std::vector<VkBuffer>& bufs) {
  if (!k.scratch) return;
  bufs.push_back(k.scratch->buf.get());
  b.held.push_back(k.scratch);
}

// A scan as one shader over packed operands (path fused).
struct ScanExe final : Executable {
  std::shared_ptr<Pipeline> pipe;
  ScanShader plan;
  std::vector<AVal> operands, results;
  std::int64_t length = 0;
  int bound_buffers(int) const override { return 2; }
};

// A scan whose every step's dispatches are recorded into the command buffer (path preencoded):
// buffers and descriptor sets are made once per run and reused by every step.
struct PreencodedExe final : Executable {
  ScanProgram sp;
  std::vector<std::shared_ptr<Executable>> steps;  // per body step (kernel or routine shader)
};

// A dispatch of the blocked or cooperative associative scan.
struct BlockedLevel {
  std::int32_t
      mode;        // 0 scan, 1 fix-up, 3 fix-up from the block totals (2: a scan reading the inputs, set at dispatch)
  std::int64_t s;  // stride
  bool top;        // the top shader: several positions per invocation
};
// The blocked scan's dispatches: scans up the strides 1, B, B², ... (B positions per workgroup,
// one per invocation) while more than one position takes part, until a level fits one workgroup
// (B positions, or B_top·c_top with the top shader); then, top down, a fix-up of every level that
// spanned several. B_top: the top level's workgroup (0: B). The cooperative form's levels are the
// same with B its chunk (K positions per workgroup in turn) and no top shader (c_top 1).
std::vector<BlockedLevel> blocked_levels(std::int64_t n, std::int64_t c_top, std::int64_t B, std::int64_t B_top = 0);

struct AssocExe final : Executable {
  std::shared_ptr<Pipeline> pipe;     // Kogge-Stone rounds; null where the blocked form runs
  std::shared_ptr<Pipeline> blocked;  // null where a workgroup's elements do not fit its memory
  std::shared_ptr<Pipeline> top;      // the blocked form's top level, several positions per invocation
  std::shared_ptr<Pipeline> coop;     // the cooperative form (a workgroup per combine), where it runs
  std::vector<BlockedLevel> levels;   // the blocked or cooperative form's dispatches (blocked_levels)
  AssocShader plan;
  std::vector<AVal> operands;
  int num_consts = 0;
  std::int64_t length = 0;
  // leaves its first level computes (AssocProgram::leaf_kernels): the dispatch binds consts | the
  // other leaves | extra operands
  std::vector<bool> computed;
  std::size_t extra = 0;
  // the bindings of its widest dispatch (the blocked, cooperative or Kogge-Stone shader's)
  int bound_buffers(int) const override;
};

// A routine without a shader: the oracle's, on the host (download, run, upload).
struct HostRoutineExe final : Executable {
  Op op;
  std::shared_ptr<HostExecutable> host;
};

// What the scan runner needs of the backend to plan: pipelines, and the executables of a body's
// steps (preencoded scans).
class KernelSource {
 public:
  virtual ~KernelSource() = default;
  virtual std::shared_ptr<KernelExe> kernel_exe(const Shader& sh, const std::string& key,
                                                std::uint32_t push_bytes = 0) = 0;
  virtual std::shared_ptr<Executable> prepare(const Op& op) = 0;
  virtual std::shared_ptr<Executable> prepare_kernel(const Kernel& k) = 0;
};

class ScanRunner {
 public:
  ScanRunner(KernelSource& kernels, Recorder& rec, BufferPool& pool, std::string device_name)
      : kernels_(kernels), rec_(rec), pool_(pool), device_(std::move(device_name)) {}

  // Plans (and remembers, with the planner's refusals) for `lim` (the limits profile, named by
  // `profile` in the keys) and target t.
  ScanPlan plan_scan(const ScanProgram& sp, const Target& t, const ScanLimits& lim, const std::string& profile);
  ScanPlan plan_associative_scan(const AssocProgram& ap, const ScanLimits& lim, const std::string& profile);

  // Records a scan executable's dispatches over the operands' and results' buffers; live_bytes
  // only words an out-of-memory error.
  void run(Executable& exe, std::span<Buf* const> in, std::span<Buf* const> out, std::size_t live_bytes);
  static bool runs(const Executable& exe) {
    return dynamic_cast<const ScanExe*>(&exe) || dynamic_cast<const PreencodedExe*>(&exe) ||
           dynamic_cast<const AssocExe*>(&exe);
  }
  std::size_t size() const { return plans_.size(); }
  void clear() { plans_.clear(); }

 private:
  ScanPlan plan_fused(const ScanProgram& sp, const ScanLimits& lim, std::string& not_fused);
  ScanPlan plan_preencoded(const ScanProgram& sp, const std::string& not_fused);
  ScanPlan assoc_plan(std::shared_ptr<AssocExe> x);  // levels and reason of a compiled form
  const ScanPlan& remember(const std::string& key, ScanPlan plan);
  // a reused buffer (its first write here goes through barrier_for), else a new one
  std::unique_ptr<Buf> scratch_buf(std::size_t bytes) {
    if (auto b = rec_.take_reusable(bytes)) return b;
    return pool_.acquire(bytes, live_bytes_);
  }

  // Fused scan: operands copied into one packed buffer, the loop shader (one dispatch, or one per
  // chunk of steps where the driver limits loop iterations), results copied out.
  void run_scan(ScanExe& x, std::span<Buf* const> in, std::span<Buf* const> out);
  // Kogge-Stone: leaves packed into one buffer, rounds d = 1, 2, 4, ... ping-pong between two;
  // the blocked and cooperative forms: levels and fix-ups.
  void run_assoc(AssocExe& x, std::span<Buf* const> in, std::span<Buf* const> out);
  void record_blocked(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer q0, std::span<Buf* const> in,
                      std::span<Buf* const> out, std::span<Buf* const> extra);
  int record_kogge_stone(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer q0, VkBuffer q1);
  // The cooperative form's levels and fix-ups, in place on `leaves` (the packed leaves), or (the
  // plan's direct form; leaves null) reading in at the first level and in place on out after
  void record_coop(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer leaves, std::span<Buf* const> in,
                   std::span<Buf* const> out);
  // Preencoded scan: the body's dispatches for every step recorded in order, x slices and ys moved
  // by buffer copies, carries in buffers of their own (staged when a carry output is another carry).
  void run_preencoded(PreencodedExe& x, std::span<Buf* const> in, std::span<Buf* const> out);

  KernelSource& kernels_;
  Recorder& rec_;
  BufferPool& pool_;
  std::string device_;
  std::size_t live_bytes_ = 0;
  std::unordered_map<std::string, ScanPlan> plans_;  // the planner's answers, refusals included
};

}  // namespace jx::vk
