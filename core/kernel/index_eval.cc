#include "core/kernel/index_eval.h"

#include <cassert>

#include "core/prim/scalar_ops.h"

namespace jx {

IndexEvaluator::IndexEvaluator(const Kernel& k, int root)
    : k_(k), root_(root), cone_(k.reachable(root)), vals_(k.nodes.size(), 0.0) {
  for (int i : cone_) {
    const KNodeKind kind = k.nodes[i].kind;
    if (kind == KNodeKind::load || kind == KNodeKind::reduce_result) index_only_ = false;
  }
}

double IndexEvaluator::at(std::span<const std::int64_t> idx) {
  assert(index_only_ && idx.size() == k_.space.size());
  for (int i : cone_) {
    const KNode& n = k_.nodes[i];
    double v = 0.0;
    if (n.kind == KNodeKind::constant) {
      v = n.value;
    } else if (n.kind == KNodeKind::iota) {
      v = static_cast<double>(idx[n.dim]);
    } else {  // alu: the operands' dtype is the branches' for select, else the first operand's
      const DType in = k_.nodes[n.prim == Prim::select ? n.b : n.a].dtype;
      v = scalar::apply_one(n.prim, in, n.dtype, vals_[n.a], n.b >= 0 ? vals_[n.b] : 0.0, n.c >= 0 ? vals_[n.c] : 0.0);
    }
    vals_[i] = scalar::round_to(n.dtype, v);
  }
  return vals_[root_];
}

}  // namespace jx
