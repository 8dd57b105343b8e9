#include "core/prim/prim.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace jx {

std::string_view prim_name(Prim p) {
  switch (p) {
#define JX_PRIM(name, arity, kind) \
  case Prim::name:                 \
    return #name;
#include "core/prim/prims.def"
#undef JX_PRIM
  }
  return "invalid";
}

int prim_arity(Prim p) {
  switch (p) {
#define JX_PRIM(name, arity, kind) \
  case Prim::name:                 \
    return arity;
#include "core/prim/prims.def"
#undef JX_PRIM
  }
  return 0;
}

namespace {
const char* py(bool b) { return b ? "True" : "False"; }  // Python's spelling, as JAX prints it
std::string tup(const std::vector<std::int64_t>& v) {
  return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
}
}  // namespace

std::string PrimParams::str(Prim p) const {
  if (p == Prim::convert) return fmt::format("new_dtype={}", dtype_name(dtype));
  switch (p) {
  JX_CASES_ELEMENTWISE_UNARY:
  JX_CASES_ELEMENTWISE_BINARY:
  case Prim::select:
  case Prim::lu:
  case Prim::inv: return "";
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod: return fmt::format("axes={}", tup(axes));
    case Prim::argmax:
    case Prim::argmin: return fmt::format("axis={}", axis);
    case Prim::rev: return fmt::format("dimensions={}", tup(axes));
    case Prim::dot_general:
      return fmt::format("dimension_numbers=(({}, {}), ({}, {}))", tup(lhs_contract), tup(rhs_contract), tup(lhs_batch),
                         tup(rhs_batch));
    case Prim::reshape: return fmt::format("new_sizes={}", tup(shape));
    case Prim::transpose: return fmt::format("permutation={}", tup(perm));
    case Prim::broadcast_in_dim: return fmt::format("shape={} broadcast_dimensions={}", tup(shape), tup(dims));
    case Prim::slice:
      return fmt::format("start_indices={} limit_indices={} strides={}", tup(start), tup(limit), tup(strides));
    case Prim::concatenate: return fmt::format("dimension={}", axis);
    case Prim::pad: return fmt::format("low={} high={} value={}", tup(lo), tup(hi), value);
    case Prim::iota: return fmt::format("dtype={} shape={} dimension={}", dtype_name(dtype), tup(shape), axis);
    case Prim::cholesky: return "";
    case Prim::scan:
      return fmt::format("length={} reverse={} num_consts={} num_carry={} require={} jaxpr={}", length, py(reverse),
                         num_consts, num_carry, require_paths.bits(), body ? body->str() : "null");
    case Prim::associative_scan:
      return fmt::format("axis={} reverse={} num_consts={}{} jaxpr={}", axis, py(reverse), num_consts,
                         tangent_of ? fmt::format(" tangent_consts={} tangent_leaves={} tangent_of={}",
                                                  tup(tangent_consts), tup(tangent_leaves), tangent_of->str())
                                    : "",
                         body ? body->str() : "null");
    case Prim::while_loop:  // JAX's own spelling, so that the text loader reads both alike
      return fmt::format("body_jaxpr={} body_nconsts={} cond_jaxpr={} cond_nconsts={}", body ? body->str() : "null",
                         num_consts, cond ? cond->str() : "null", cond_consts);
    case Prim::cond: {  // JAX's spelling: the branches one after another, no commas
      std::vector<std::string> b;
      for (const auto& s : branches) b.push_back(s ? s->str() : "null");
      return fmt::format("branches=(\n{}\n)", fmt::join(b, "\n"));
    }
    case Prim::triangular_solve:
      return fmt::format("left_side={} lower={} transpose_a={} unit_diagonal={}", py(left_side), py(lower),
                         py(transpose_a), py(unit_diagonal));
  }
  return "";
}

}  // namespace jx
