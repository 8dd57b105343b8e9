#include "core/kernel/index_eval.h"

#include <cassert>

#include "core/prim/scalar_ops.h"

namespace jx {
namespace {

// v held in dtype d, as the oracle's kernel interpreter rounds after every node (int32 wraps)
double round_to(DType d, double v) {
  switch (d) {
    case DType::float32: return static_cast<float>(v);
    case DType::int32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v))));
    case DType::bool_: return v != 0.0 ? 1.0 : 0.0;
    case DType::float64: break;
  }
  return v;
}

// the elementwise node n on operand values a, b, c (of dtype `in`; select: its branches')
double alu(const KNode& n, DType in, double a, double b, double c) {
  if (n.prim == Prim::convert)
    return visit_dtype(in, [&]<class S>() {
      return visit_dtype(n.dtype,
                         [&]<class T>() { return static_cast<double>(scalar::convert<T>(static_cast<S>(a))); });
    });
  return visit_dtype(in, [&]<class T>() {
    return scalar::with_elementwise(n.prim, [&]<Prim P>() -> double {
      if constexpr (P == Prim::convert)
        return 0.0;  // handled above
      else
        return scalar::apply<P, T>(T(a), T(b), T(c));
    });
  });
}

}  // namespace

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
      v = alu(n, in, vals_[n.a], n.b >= 0 ? vals_[n.b] : 0.0, n.c >= 0 ? vals_[n.c] : 0.0);
    }
    vals_[i] = round_to(n.dtype, v);
  }
  return vals_[root_];
}

}  // namespace jx
