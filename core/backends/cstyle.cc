#include "core/backends/cstyle.h"

#include <algorithm>
#include <functional>

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

std::string CStyleLanguage::node(const Kernel& k, int i, const std::vector<std::string>& idx) const {
  const KNode& n = k.nodes[i];
  switch (n.kind) {
    case KNodeKind::load: {
      const KLoad& l = k.loads[n.load];
      std::string off = fmt::format("{}", l.offset);
      for (std::size_t d = 0; d < l.strides.size(); ++d)
        if (l.strides[d] != 0) off += fmt::format(" + {}*{}", l.strides[d], idx[d]);
      if (l.indexed) off = index_value(n.a);
      if (l.clamp) off = clamp(off, k.inputs[l.buffer].size() - 1);
      return load(k, l, n, off);
    }
    case KNodeKind::constant: return literal(n.dtype, n.value);
    case KNodeKind::iota: return cast(n.dtype, idx[n.dim], true);
    case KNodeKind::reduce_result: return cast(n.dtype, acc_, true);
    case KNodeKind::alu: break;
  }
  return cast(n.dtype, op(k, n), false);
}

namespace {

// Where each node of `order` is computed. Regions nest: region 0 is the whole code; a lazy select
// s in region r opens two, its then- and else-branch (children of r). A node belongs to the
// innermost region holding every use of it (a branch operand is used in the branch's region, any
// other operand in its user's region), found users first (reverse topological order). A select
// is lazy where its branches' regions hold a load between them (a branch of arithmetic alone is
// cheaper computed than jumped over) and the dialect says so (`lazy_ok(select, then's loads,
// else's loads)`: a GPU, where the jump saves enough of the loads, warp by warp).
struct SelectRegions {
  std::vector<int> parent = {-1}, depth = {0}, loads = {0};
  std::vector<int> region;                    // by node: where it is computed (effective: lazy selects only)
  std::vector<std::pair<int, int>> branches;  // by node: a lazy select's (then, else) regions, else (-1, -1)
  int lca(int a, int b) const {
    while (a != b) {
      if (depth[a] >= depth[b])
        a = parent[a];
      else
        b = parent[b];
    }
    return a;
  }
};

SelectRegions select_regions(const Kernel& k, const std::vector<int>& order,
                             const std::function<bool(int, int, int)>& lazy_ok) {
  SelectRegions R;
  const std::size_t nn = k.nodes.size();
  std::vector<int> use(nn, -2);  // -2: no use seen in `order`
  R.region.assign(nn, 0);
  R.branches.assign(nn, {-1, -1});
  std::vector<bool> in(nn, false);
  for (int i : order) in[i] = true;
  auto used = [&](int x, int r) {
    if (x >= 0 && in[x]) use[x] = use[x] == -2 ? r : R.lca(use[x], r);
  };
  auto open = [&](int r) {
    R.parent.push_back(r), R.depth.push_back(R.depth[r] + 1), R.loads.push_back(0);
    return static_cast<int>(R.parent.size()) - 1;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const KNode& n = k.nodes[*it];
    const int r = use[*it] == -2 ? 0 : use[*it];
    R.region[*it] = r;
    if (n.kind == KNodeKind::load) ++R.loads[r];
    if (n.kind == KNodeKind::alu && n.prim == Prim::select) {
      R.branches[*it] = {open(r), open(r)};
      used(n.a, r), used(n.b, R.branches[*it].first), used(n.c, R.branches[*it].second);
    } else if (n.kind == KNodeKind::alu || n.kind == KNodeKind::load) {
      used(n.a, r), used(n.b, r), used(n.c, r);
    }
  }
  for (int r = static_cast<int>(R.parent.size()) - 1; r > 0; --r) R.loads[R.parent[r]] += R.loads[r];
  // a select without loads in its branches is computed eagerly: its branches' nodes go up to the
  // nearest lazy region (parents before children: regions are numbered in that order)
  std::vector<int> eff(R.parent.size(), 0);
  std::vector<bool> lazy(R.parent.size(), false);
  for (int i : order)
    if (auto [t, e] = R.branches[i]; t >= 0)
      lazy[t] = lazy[e] = R.loads[t] + R.loads[e] > 0 && lazy_ok(i, R.loads[t], R.loads[e]);
  for (std::size_t r = 1; r < R.parent.size(); ++r) eff[r] = lazy[r] ? static_cast<int>(r) : eff[R.parent[r]];
  for (int i : order) {
    R.region[i] = eff[R.region[i]];
    if (auto& b = R.branches[i]; b.first >= 0 && !lazy[b.first]) b = {-1, -1};
  }
  return R;
}

}  // namespace

std::string CStyleLanguage::nodes(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx,
                                  const std::string& ind) const {
  const bool selects = std::any_of(order.begin(), order.end(), [&](int i) {
    return k.nodes[i].kind == KNodeKind::alu && k.nodes[i].prim == Prim::select;
  });
  if (!selects) {
    std::string s;
    for (int i : order) s += fmt::format("{}const {} {} = {};\n", ind, type(k.nodes[i].dtype), var(i), node(k, i, idx));
    return s;
  }
  const SelectRegions R = select_regions(k, order, [&](int i, int lt, int le) { return lazy_select(k, i, lt, le); });
  // region r's nodes in order, a lazy select's branches inside its if / else
  std::function<std::string(int, const std::string&)> region = [&](int r, const std::string& in) {
    std::string s;
    for (int i : order) {
      if (R.region[i] != r) continue;
      const KNode& n = k.nodes[i];
      const auto [t, e] = R.branches[i];
      if (t < 0) {
        s += fmt::format("{}const {} {} = {};\n", in, type(n.dtype), var(i), node(k, i, idx));
        continue;
      }
      s += fmt::format("{}{} {};\n{}if ({}) {{\n", in, type(n.dtype), var(i), in, truthy(k.nodes[n.a].dtype, var(n.a)));
      s += region(t, in + "  ") + fmt::format("{}  {} = {};\n{}}} else {{\n", in, var(i), var(n.b), in);
      s += region(e, in + "  ") + fmt::format("{}  {} = {};\n{}}}\n", in, var(i), var(n.c), in);
    }
    return s;
  };
  return region(0, ind);
}

}  // namespace jx
