#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/backends/backend.h"
#include "core/kernel/program.h"

namespace jx {

struct LowerOptions {
  int max_buffers = 0;  // buffers one kernel may bind (inputs + output); 0: unlimited
  // replay ignore_buffer_budget, the JS runtime's fusion as a model: elementwise values used
  // several times are recomputed in every consumer instead of materialized, every elementwise
  // operand of a dot_general is fused into its reduction whatever it costs, and pad is a step
  // of its own (its output a buffer), so kernels gather more buffers
  bool inline_multi_use = false;
  // the backend has float64: unrolled float sums accumulate in double, as its reductions do
  bool f64 = true;
  // sums of at most 8 terms per output become elementwise code (lower.cc: unrolled)
  bool unroll_sums = false;
  // an elementwise value used by several equations is recomputed in each when its tree has at
  // most recompute_nodes nodes (0: never), and no exp/log/div-class operation unless
  // recompute_expensive; else it is materialized once
  std::size_t recompute_nodes = 0;
  bool recompute_expensive = false;
  // BackendLimits::scratch_reduction_min: such reductions need a buffer of the budget
  std::int64_t scratch_reduction_min = 0;
};
// The options a backend's programs are lowered with under a buffer budget.
LowerOptions lower_options(const Backend& be, int budget);

// Fuses elementwise chains (through views) and reduction epilogues into kernels that never
// bind more than max_buffers buffers; routines and data-dependent primitives become routine
// steps. Throws Error when the budget cannot be met (fewer than 4 buffers for a select).
struct Jaxpr;
Program lower(const Jaxpr& j, const LowerOptions& o);

// A program prepared on one backend.
class CompiledProgram {
 public:
  CompiledProgram(Program p, Backend& be, int budget = 0);
  std::vector<Array> run(const std::vector<Array>& inputs) const;
  const Program& program() const { return prog_; }
  // Empty when every scan step runs as a compiled loop; else the planner's reason for the first
  // that runs as a host loop.
  std::string host_loop_reason() const;
  Backend& backend() const { return be_; }

 private:
  Program prog_;
  Backend& be_;
  std::vector<std::shared_ptr<Executable>> kexe_, rexe_;
  struct ScanStep {
    bool associative = false;                     // an associative_scan (else a lax.scan)
    bool while_loop = false;                      // a while_loop or cond: run by the runtime on the host
    std::shared_ptr<Executable> fused;            // the whole loop on the backend, or
    std::shared_ptr<const CompiledProgram> body;  // the body for a host loop
    std::string why;                              // the planner's reason
  };
  std::vector<ScanStep> scans_;
  ScanStep prepare_associative_scan(const Op& op, int budget) const;
  std::shared_ptr<const SeriesBody> series_of(const Op& op, int budget) const;
  int budget_ = 0;
  class Run;  // one call's slots (program.cc)
};

}  // namespace jx
