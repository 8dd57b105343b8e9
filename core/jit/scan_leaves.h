#pragma once
// Leaf kernels: an elementwise kernel whose output only an associative scan reads, as one of its
// leaves, computed in the scan's first level instead of written to memory and read back
// (AssocProgram::leaf_kernels; backends with BackendLimits::scan_leaf_kernels). The program pass
// offers them per scan; the backend's plan says whether it takes them; absorb rewrites the program.
#include <utility>
#include <vector>

#include "core/kernel/program.h"

namespace jx {

struct LeafOffer {
  std::vector<LeafKernel> leaves;  // inputs index `extra`
  std::vector<int> extra;          // program buffers the kernels read, each once
  std::vector<int> producers;      // the kernels' steps
  bool empty() const { return leaves.empty(); }
};

// For each associative scan (by step), the leaves a kernel step computes (elementwise, one
// output) which no other step, nor the program's outputs, reads; scans with none are left out.
std::vector<std::pair<int, LeafOffer>> offer_leaf_kernels(const Program& p);

// By control: which of its results no later step, nor the program's outputs, reads.
std::vector<std::vector<bool>> unread_results(const Program& p);

// The offers taken, by scan step: each scan binds consts | its other leaves | extra, the producers'
// steps and kernels go (kernel indices renumbered), frees are placed again.
void absorb_leaf_kernels(Program& p, const std::vector<std::pair<int, LeafOffer>>& taken);

}  // namespace jx
