#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/backends/backend.h"
#include "core/kernel/kernel.h"

namespace jx {

// A compiled jaxpr: buffers (program-level ids) and steps in execution order. Buffers
// [0, num_inputs) are the jaxpr's arguments then its constants; every other buffer is written
// by exactly one kernel or routine step and freed right after its last use unless it is an output.
struct Step {
  enum class Kind : std::uint8_t { kernel, routine, control, free } kind;
  int index = -1;  // into kernels / routines / controls
  std::vector<int> in, out;
};

struct Program {
  std::vector<AVal> buffers;
  int num_inputs = 0;
  std::vector<int> outputs;  // may repeat, may name inputs
  std::vector<Kernel> kernels;
  std::vector<Op> routines;
  std::vector<Op> controls;  // scans: their bodies are compiled as sub-programs
  std::vector<Step> steps;
  std::string str() const;  // set_debug(4)
};

struct LowerOptions {
  int max_buffers = 0;  // buffers one kernel may bind (inputs + output); 0: unlimited
};

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
  Backend& backend() const { return be_; }

 private:
  Program prog_;
  Backend& be_;
  std::vector<std::shared_ptr<Executable>> kexe_, rexe_;
  std::vector<std::shared_ptr<const CompiledProgram>> sub_;
  int budget_ = 0;
};

}  // namespace jx
