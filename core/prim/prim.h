#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/scan_path.h"
#include "core/base/shape.h"

namespace jx {

enum class Prim : std::uint8_t {
#define JX_PRIM(name, arity, kind) name,
#include "core/prim/prims.def"
#undef JX_PRIM
};

enum class PrimKind : std::uint8_t { elementwise, reduce, movement, creation, routine, control };

// A sub-computation carried by a control primitive (a scan body): a closed jaxpr, seen from
// this layer only through its signature and printed form.
struct SubProgram {
  virtual ~SubProgram() = default;
  virtual std::vector<AVal> in_avals() const = 0;
  virtual std::vector<AVal> out_avals() const = 0;
  virtual std::string str() const = 0;
};

inline constexpr int kNumPrims = 0
#define JX_PRIM(name, arity, kind) +1
#include "core/prim/prims.def"
#undef JX_PRIM
    ;

std::string_view prim_name(Prim p);
int prim_arity(Prim p);  // -1: variadic
constexpr PrimKind prim_kind(Prim p) {
  switch (p) {
#define JX_PRIM(name, arity, kind) \
  case Prim::name:                 \
    return PrimKind::kind;
#include "core/prim/prims.def"
#undef JX_PRIM
  }
  return PrimKind::elementwise;
}

// Groups of primitives, named once: the case labels a total switch uses for a whole group (the
// switch stays total: -Werror=switch still names a new primitive's missing rule).
#define JX_CASES_TRANSCENDENTAL \
  case Prim::exp:               \
  case Prim::log:               \
  case Prim::log1p:             \
  case Prim::sqrt:              \
  case Prim::sin:               \
  case Prim::cos:               \
  case Prim::tanh
#define JX_CASES_COMPARISON \
  case Prim::lt:            \
  case Prim::le:            \
  case Prim::gt:            \
  case Prim::ge:            \
  case Prim::eq:            \
  case Prim::ne
// elementwise with one operand
#define JX_CASES_ELEMENTWISE_UNARY \
  case Prim::neg:                  \
  case Prim::abs:                  \
  case Prim::sign:                 \
  case Prim::logical_not:          \
  case Prim::isnan:                \
  case Prim::isfinite:             \
  case Prim::convert:              \
  case Prim::stop_gradient: JX_CASES_TRANSCENDENTAL
// elementwise with two operands
#define JX_CASES_ELEMENTWISE_BINARY \
  case Prim::add:                   \
  case Prim::sub:                   \
  case Prim::mul:                   \
  case Prim::div:                   \
  case Prim::pow:                   \
  case Prim::max:                   \
  case Prim::min:                   \
  case Prim::logical_and:           \
  case Prim::logical_or: JX_CASES_COMPARISON

// data movement: each output element is one input element (or pad's value)
#define JX_CASES_MOVEMENT      \
  case Prim::reshape:          \
  case Prim::transpose:        \
  case Prim::broadcast_in_dim: \
  case Prim::slice:            \
  case Prim::rev:              \
  case Prim::concatenate:      \
  case Prim::pad

namespace detail {
constexpr bool groups_match_kinds() {  // the groups are exactly the elementwise primitives, select aside
  for (int i = 0; i < kNumPrims; ++i) {
    const Prim p = static_cast<Prim>(i);
    bool grouped = false;
    switch (p) {
    JX_CASES_ELEMENTWISE_UNARY:
    JX_CASES_ELEMENTWISE_BINARY:
    case Prim::select: grouped = true; break;
      default: break;
    }
    if (grouped != (prim_kind(p) == PrimKind::elementwise)) return false;
    bool moves = false;
    switch (p) {
    JX_CASES_MOVEMENT:
      moves = true;
      break;
      default: break;
    }
    if (moves != (prim_kind(p) == PrimKind::movement)) return false;
  }
  return true;
}
static_assert(groups_match_kinds(),
              "JX_CASES_ELEMENTWISE_* and JX_CASES_MOVEMENT must list exactly the elementwise and movement primitives");
}  // namespace detail

// Static parameters of a primitive application. One flat struct rather than a variant per
// primitive: each primitive reads only the fields its rule documents, the rest stay default,
// and equality/hash/printing cover all of them (the jit cache key needs exactly that).
struct PrimParams {
  std::vector<std::int64_t> axes;                   // reduce_*: reduced axes; rev: flipped axes
  std::int64_t axis = 0;                            // argmax/argmin, concatenate; iota: dimension
  Shape shape;                                      // reshape, broadcast_in_dim, iota: output shape
  std::vector<std::int64_t> perm;                   // transpose
  std::vector<std::int64_t> dims;                   // broadcast_in_dim: operand dim i -> output dim dims[i]
  std::vector<std::int64_t> start, limit, strides;  // slice
  std::vector<std::int64_t> lo, hi;                 // pad (non-negative edge padding)
  double value = 0.0;                               // pad: padding value
  DType dtype = DType::float32;                     // convert, iota: output dtype
  // dot_general dimension numbers
  std::vector<std::int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
  // triangular_solve: solve op(a) x = b (left_side) or x op(a) = b; cholesky: lower only
  bool left_side = true, lower = true, transpose_a = false, unit_diagonal = false;
  // scan: body(consts..., carry..., x...) -> (carry..., y...); operands consts, init, xs
  std::shared_ptr<const SubProgram> body;
  int num_consts = 0, num_carry = 0;
  std::int64_t length = 0;
  bool reverse = false;
  ScanPaths require_paths;  // scan: the paths its caller accepts (empty: any)
  // scan / associative_scan made by vmap (core/transform/scan.cc: control_batch, assoc_scan.cc:
  // assoc_batch): `unbatched` is the body before batching, which backends may run once per series
  // (vulkan: a workgroup or an invocation per series, or a grid of blocked scans) instead of `body`
  // over the whole batch. Its operands are the primitive's after the first (operands -
  // batched.size()) (the batched body's own hoisted constants); batched[i] is 1 where operand i of
  // those has the batch axis of `batch_size` (consts and scan carries: axis 0; scan xs: axis 1,
  // after the scan axis; associative-scan leaves, all batched: right before `axis`, which is the
  // unbatched scan axis + 1). A hint: not printed, and a
  // primitive without it means the same; a rule that copies these PrimParams for another body clears it.
  std::shared_ptr<const SubProgram> unbatched;
  std::int64_t batch_size = 0;
  std::vector<std::int64_t> batched;
  // associative_scan, set on a scan of (element, tangent) pairs (its body the jvp of the combine
  // `tangent_of`; operands hoisted | consts | tangents of consts tangent_consts | elements |
  // tangents of the float leaves tangent_leaves): linear in the tangents, it transposes (as a
  // reverse scan of cotangents, core/transform/assoc_transpose.cc)
  std::shared_ptr<const SubProgram> tangent_of;
  std::vector<std::int64_t> tangent_consts, tangent_leaves;
  // while_loop (lax.while_loop): operands cond consts (cond_consts) | body consts (num_consts) |
  // carry; cond(cond consts..., carry...) -> bool[], body(body consts..., carry...) -> carry
  std::shared_ptr<const SubProgram> cond;
  int cond_consts = 0;
  // cond (lax.cond / lax.switch): operands index (int32[]) | ops; branches[k](ops...) -> outs
  std::vector<std::shared_ptr<const SubProgram>> branches;

  bool operator==(const PrimParams&) const = default;
  std::string str(Prim p) const;  // only the fields p uses, JAX style: "axes=(0, 1)"
};

}  // namespace jx
