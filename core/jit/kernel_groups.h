#pragma once
// Horizontal fusion: consecutive kernel steps of a program that do not read each other's outputs
// run as one dispatch (Backend::prepare_kernel_group), on backends whose launches cost more than
// such kernels' work. Vertical fusion (lower.cc) already merged what feeds what; what is left in a
// run of independent kernels is one launch, and on a GPU one pass of the front end, per kernel.
#include <memory>
#include <vector>

#include "core/backends/backend.h"
#include "core/kernel/program.h"

namespace jx {

struct KernelGroup {
  std::vector<int> steps;    // the members' step indices, in program order (frees may lie between)
  std::vector<int> in, out;  // program buffers: the distinct inputs, then one output per member
  std::string name;          // the members' kernel names joined by '+'
  std::shared_ptr<Executable> exe;
};

// Groups of at least two members, each binding at most max_bindings buffers (0: no bound).
// Invariants: a group's steps are kernel steps with only free steps between them; no member reads
// a buffer another member writes; a free between members never frees a member's input (the
// program frees a buffer after its last reader), so the whole group may run at its first step.
std::vector<KernelGroup> plan_kernel_groups(const Program& p, Backend& be, int max_bindings);

}  // namespace jx
