#pragma once
// The value of a kernel node that depends on the space index alone: constants, iotas and the
// elementwise primitives over them (the window tests of concatenate and pad, the parity of an
// interleave), evaluated on the host by the oracle's scalar table (core/prim/scalar_ops.h), so
// the value is the one every backend computes. A renderer asks it where a condition is the same
// over a group of invocations (glsl_uniform.cc).
#include <cstdint>
#include <span>
#include <vector>

#include "core/kernel/kernel.h"

namespace jx {

class IndexEvaluator {
 public:
  IndexEvaluator(const Kernel& k, int root);
  // Whether root's value depends on the space index alone (no load, no accumulator in its cone).
  bool index_only() const { return index_only_; }
  // root's value at space index idx (one coordinate per space dim), as a double holding the
  // node's dtype exactly (bool: 0 or 1). Requires index_only().
  double at(std::span<const std::int64_t> idx);

 private:
  const Kernel& k_;
  int root_;
  std::vector<int> cone_;     // root's cone in topological order
  std::vector<double> vals_;  // by node, for the last index evaluated
  bool index_only_ = true;
};

}  // namespace jx
