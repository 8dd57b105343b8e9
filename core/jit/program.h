#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/backends/backend.h"
#include "core/backends/target.h"
#include "core/jit/kernel_groups.h"
#include "core/kernel/program.h"

namespace jx {

struct LowerOptions {
  int max_buffers = 0;  // buffers one kernel may bind (inputs + output); 0: unlimited
  // replay ignore_buffer_budget, the JS runtime's fusion as a model: elementwise values used
  // several times are recomputed in every consumer instead of materialized, every elementwise
  // operand of a dot_general is fused into its reduction whatever it costs, and pad is a step
  // of its own (its output a buffer), so kernels gather more buffers
  bool inline_multi_use = false;
  // the backend has float64: unrolled float sums accumulate in double, as its reductions do,
  // except sums of 3 to f32_sum_max_terms terms, which its reductions accumulate in float
  bool f64 = true;
  std::int64_t f32_sum_max_terms = 0;
  // sums of at most 8 terms per output become elementwise code (lower.cc: unrolled) where the
  // code has at most unroll_nodes nodes
  bool unroll_sums = false;
  std::size_t unroll_nodes = 384;
  // an elementwise value used by several equations is recomputed in each when its tree has at
  // most recompute_nodes nodes (0: never), and no exp/log/div-class operation unless
  // recompute_expensive; else it is materialized once
  std::size_t recompute_nodes = 0;
  bool recompute_expensive = false;
  // a transcendental over at most 1/64 of the elements it is broadcast to (and to at least 4096)
  // is materialized before the broadcast rather than recomputed for every element (on the H200
  // exp(θ) of the DLM's 3 parameters, in double precision, took 0.09 of the B = 1024 gradient's
  // 1.40 ms of GPU time inside kernels over [1024, 1600, 2, 2])
  bool hoist_transcendentals = false;
  // BackendLimits::scratch_reduction_min: such reductions need a buffer of the budget
  std::int64_t scratch_reduction_min = 0;
  // the backend's bindings per kernel (0: unlimited): a kernel with one to spare gets
  // Kernel::scratch_binding
  int max_bindings = 0;
};
// The options a target's programs are lowered with.
LowerOptions lower_options(const Target& t);

// Fuses elementwise chains (through views) and reduction epilogues into kernels that never
// bind more than max_buffers buffers; routines and data-dependent primitives become routine
// steps. Throws Error when the budget cannot be met (fewer than 4 buffers for a select).
struct Jaxpr;
Program lower(const Jaxpr& j, const LowerOptions& o);
inline Program lower(const Jaxpr& j, const Target& t) { return lower(j, lower_options(t)); }
// A free step after each buffer's last use (a program with none: lower, or a pass that moved uses).
void insert_frees(Program& p);

// A program prepared on its target's backend: every kernel and routine prepared, every scan
// planned (Backend::plan_scan; require_path checked there, once).
class CompiledProgram {
 public:
  CompiledProgram(Program p, const Target& t);
  std::vector<Array> run(const std::vector<Array>& inputs) const;
  const Program& program() const { return prog_; }
  // Empty when every scan step runs as a compiled loop; else the planner's reason for the first
  // that runs as a host loop.
  std::string host_loop_reason() const;
  Backend& backend() const { return be_; }
  const Target& target() const { return target_; }

 private:
  Program prog_;
  Target target_;
  Backend& be_;
  std::vector<std::shared_ptr<Executable>> kexe_, rexe_;
  // independent kernels dispatched together (launch-bound backends; JX_KERNEL_GROUPS=0: none);
  // group_at_[step]: the group a kernel step belongs to, -1 none (empty: no groups)
  std::vector<KernelGroup> groups_;
  std::vector<int> group_at_;
  struct ScanStep {
    bool associative = false;                     // an associative_scan (else a lax.scan)
    bool while_loop = false;                      // a while_loop or cond: run by the runtime on the host
    ScanPlan plan;                                // the backend's (plan.exe: the whole loop on the backend)
    std::shared_ptr<const CompiledProgram> body;  // without plan.exe: the body for a host loop
  };
  std::vector<ScanStep> scans_;
  std::map<int, ScanStep> leaf_plans_;  // by control: associative scans planned with leaf kernels
  ScanStep plan_scan(const Op& op) const;
  AssocProgram assoc_program(const Op& op) const;
  ScanStep plan_associative_scan(const Op& op, std::vector<bool> unread = {}) const;
  void take_leaf_kernels(const std::vector<std::vector<bool>>& unread);
  std::shared_ptr<const SeriesBody> series_of(const Op& op) const;
  class Run;  // one call's slots (program.cc)
};

// The compile recipe: lower j under the target's options, then prepare it on the target's backend.
std::shared_ptr<const CompiledProgram> compile(const Jaxpr& j, const Target& t);

}  // namespace jx
