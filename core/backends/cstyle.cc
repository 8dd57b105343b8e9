#include "core/backends/cstyle.h"

#include <fmt/format.h>

#include "core/base/errors.h"

namespace jx {

DType CStyleLanguage::operand_dtype(const Kernel& k, const KNode& n) {
  return n.prim == Prim::select ? k.nodes[n.b].dtype : k.nodes[n.a].dtype;
}

std::string CStyleLanguage::op(const Kernel& k, const KNode& n) const {
  const DType in = operand_dtype(k, n);
  const bool flt = is_floating(in);
  const std::string a = var(n.a), b = var(n.b), c = var(n.c);
  switch (n.prim) {
    case Prim::neg: return "-" + a;
    case Prim::abs: return fmt::format("abs({})", a);
    case Prim::sign: return flt ? fmt::format("(isnan({0}) ? {0} : sign({0}))", a) : fmt::format("sign({})", a);
    case Prim::exp: return fmt::format("exp({})", a);
    case Prim::log: return fmt::format("log({})", a);
    case Prim::log1p: return fmt::format("log1p({})", a);
    case Prim::sqrt: return fmt::format("sqrt({})", a);
    case Prim::sin: return fmt::format("sin({})", a);
    case Prim::cos: return fmt::format("cos({})", a);
    case Prim::tanh: return fmt::format("tanh({})", a);
    case Prim::logical_not: return "!" + truthy(in, a);
    case Prim::isnan: return flt ? fmt::format("isnan({})", a) : literal(DType::bool_, 0);
    case Prim::isfinite: return flt ? fmt::format("!(isnan({0}) || isinf({0}))", a) : literal(DType::bool_, 1);
    case Prim::stop_gradient: return a;
    case Prim::convert:  // float -> int32 saturates (jx_f2i, in each dialect's prelude); to bool: != 0
      if (n.dtype == DType::int32) return flt ? fmt::format("jx_f2i({})", a) : cast(n.dtype, a, true);
      if (n.dtype == DType::bool_) return truthy(in, a);
      return cast(n.dtype, a, true);
    case Prim::add: return fmt::format("{} + {}", a, b);
    case Prim::sub: return fmt::format("{} - {}", a, b);
    case Prim::mul: return fmt::format("{} * {}", a, b);
    case Prim::div: return fmt::format("{} / {}", a, b);
    case Prim::pow: return fmt::format("pow({}, {})", a, b);
    case Prim::max: return fmt::format("jx_max({}, {})", a, b);  // NaN-propagating, in each prelude
    case Prim::min: return fmt::format("jx_min({}, {})", a, b);
    case Prim::lt: return fmt::format("({} < {})", a, b);
    case Prim::le: return fmt::format("({} <= {})", a, b);
    case Prim::gt: return fmt::format("({} > {})", a, b);
    case Prim::ge: return fmt::format("({} >= {})", a, b);
    case Prim::eq: return fmt::format("({} == {})", a, b);
    case Prim::ne: return fmt::format("({} != {})", a, b);
    case Prim::logical_and: return fmt::format("({} && {})", truthy(in, a), truthy(in, b));
    case Prim::logical_or: return fmt::format("({} || {})", truthy(in, a), truthy(in, b));
    case Prim::select: return fmt::format("({} ? {} : {})", truthy(k.nodes[n.a].dtype, a), b, c);
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod:
    case Prim::argmax:
    case Prim::argmin:
    case Prim::dot_general:
    JX_CASES_MOVEMENT:
    case Prim::iota:
    case Prim::cholesky:
    case Prim::triangular_solve:
    case Prim::lu:
    case Prim::inv:
    case Prim::scan:
    case Prim::associative_scan:
    case Prim::while_loop:
    case Prim::cond: break;
  }
  throw Error(fmt::format("{} is not an elementwise primitive", prim_name(n.prim)));
}

std::string CStyleLanguage::nodes(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx,
                                  const std::string& ind) const {
  std::string s;
  for (int i : order) {
    const KNode& n = k.nodes[i];
    std::string e;
    switch (n.kind) {
      case KNodeKind::load: {
        const KLoad& l = k.loads[n.load];
        std::string off = fmt::format("{}", l.offset);
        for (std::size_t d = 0; d < l.strides.size(); ++d)
          if (l.strides[d] != 0) off += fmt::format(" + {}*{}", l.strides[d], idx[d]);
        if (l.indexed) off = index_value(n.a);
        if (l.clamp) off = clamp(off, k.inputs[l.buffer].size() - 1);
        e = load(k, l, n, off);
        break;
      }
      case KNodeKind::constant: e = literal(n.dtype, n.value); break;
      case KNodeKind::iota: e = cast(n.dtype, idx[n.dim], true); break;
      case KNodeKind::reduce_result: e = cast(n.dtype, acc_, true); break;
      case KNodeKind::alu: e = cast(n.dtype, op(k, n), false); break;
    }
    s += fmt::format("{}const {} {} = {};\n", ind, type(n.dtype), var(i), e);
  }
  return s;
}

}  // namespace jx
