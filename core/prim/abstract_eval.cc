#include "core/prim/abstract_eval.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace jx {
namespace {

[[noreturn]] void fail(Prim p, const std::string& msg) { throw ShapeError(fmt::format("{}: {}", prim_name(p), msg)); }

std::string operands(const std::vector<AVal>& in) {
  std::vector<std::string> s;
  for (auto& a : in) s.push_back(a.str());
  return fmt::format("{}", fmt::join(s, " with "));
}

void require_float(Prim p, const AVal& a) {
  if (!is_floating(a.dtype)) fail(p, fmt::format("expected a floating-point operand, got {}", a.str()));
}

void require_numeric(Prim p, const AVal& a) {
  if (a.dtype == DType::bool_) fail(p, fmt::format("expected a numeric operand, got {}", a.str()));
}

void require_same(Prim p, const std::vector<AVal>& in) {
  for (auto& a : in)
    if (a.shape != in[0].shape || a.dtype != in[0].dtype) fail(p, "operands differ: " + operands(in));
}

void check_axes_unique(Prim p, const std::vector<std::int64_t>& axes, std::size_t ndim, const AVal& a) {
  std::set<std::int64_t> seen;
  for (auto ax : axes) {
    if (ax < 0 || ax >= static_cast<std::int64_t>(ndim))
      fail(p, fmt::format("axis {} is out of bounds for {}", ax, a.str()));
    if (!seen.insert(ax).second) fail(p, fmt::format("repeated axis {} for {}", ax, a.str()));
  }
}

// [..., n, n] matrices for the linear-algebra routines.
void require_square(Prim p, const AVal& a) {
  require_float(p, a);
  if (a.ndim() < 2 || a.shape[a.ndim() - 1] != a.shape[a.ndim() - 2])
    fail(p, fmt::format("expected a (batch of) square matrices, got {}", a.str()));
}

std::vector<AVal> dot_general_aval(Prim p, const AVal& l, const AVal& r, const PrimParams& pr) {
  if (l.dtype != r.dtype) fail(p, "operand dtypes differ: " + operands({l, r}));
  require_numeric(p, l);
  if (pr.lhs_contract.size() != pr.rhs_contract.size() || pr.lhs_batch.size() != pr.rhs_batch.size())
    fail(p, "lhs and rhs dimension numbers differ in length");
  std::vector<std::int64_t> ld = pr.lhs_contract, rd = pr.rhs_contract;
  ld.insert(ld.end(), pr.lhs_batch.begin(), pr.lhs_batch.end());
  rd.insert(rd.end(), pr.rhs_batch.begin(), pr.rhs_batch.end());
  check_axes_unique(p, ld, l.ndim(), l);
  check_axes_unique(p, rd, r.ndim(), r);
  auto match = [&](const auto& a, const auto& b, const char* what) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (l.shape[a[i]] != r.shape[b[i]])
        fail(p, fmt::format("{} dimension sizes differ: {} (lhs dim {} = {}, rhs dim {} = {})", what, operands({l, r}),
                            a[i], l.shape[a[i]], b[i], r.shape[b[i]]));
  };
  match(pr.lhs_contract, pr.rhs_contract, "contracting");
  match(pr.lhs_batch, pr.rhs_batch, "batch");
  Shape out;
  for (auto b : pr.lhs_batch) out.push_back(l.shape[b]);
  for (std::size_t i = 0; i < l.ndim(); ++i)
    if (std::find(ld.begin(), ld.end(), i) == ld.end()) out.push_back(l.shape[i]);
  for (std::size_t i = 0; i < r.ndim(); ++i)
    if (std::find(rd.begin(), rd.end(), i) == rd.end()) out.push_back(r.shape[i]);
  return {{l.dtype, out}};
}

std::vector<AVal> movement_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  const AVal& a = in[0];
  const std::size_t nd = a.ndim();
  switch (p) {
    case Prim::reshape:
      for (auto d : pr.shape)
        if (d < 0) fail(p, fmt::format("negative dimension in new shape {}", shape_str(pr.shape)));
      if (numel(pr.shape) != a.size())
        fail(p, fmt::format("cannot reshape {} ({} elements) into shape {}", a.str(), a.size(), shape_str(pr.shape)));
      return {{a.dtype, pr.shape}};
    case Prim::transpose: {
      if (pr.perm.size() != nd) fail(p, fmt::format("permutation {} does not match {}", shape_str(pr.perm), a.str()));
      check_axes_unique(p, pr.perm, nd, a);
      Shape out;
      for (auto d : pr.perm) out.push_back(a.shape[d]);
      return {{a.dtype, out}};
    }
    case Prim::broadcast_in_dim: {
      if (pr.dims.size() != nd)
        fail(p, fmt::format("broadcast_dimensions {} do not match {}", shape_str(pr.dims), a.str()));
      for (std::size_t i = 0; i < nd; ++i) {
        auto d = pr.dims[i];
        if (d < 0 || d >= static_cast<std::int64_t>(pr.shape.size()) || (i > 0 && d <= pr.dims[i - 1]))
          fail(p, fmt::format("broadcast_dimensions {} must be strictly increasing and within rank {}",
                              shape_str(pr.dims), pr.shape.size()));
        if (a.shape[i] != 1 && a.shape[i] != pr.shape[d])
          fail(p, fmt::format("cannot broadcast {} to shape {}", a.str(), shape_str(pr.shape)));
      }
      for (auto d : pr.shape)
        if (d < 0) fail(p, fmt::format("negative dimension in shape {}", shape_str(pr.shape)));
      return {{a.dtype, pr.shape}};
    }
    case Prim::slice: {
      if (pr.start.size() != nd || pr.limit.size() != nd || pr.strides.size() != nd)
        fail(p, fmt::format("start/limit/strides must have one entry per dimension of {}", a.str()));
      Shape out;
      for (std::size_t i = 0; i < nd; ++i) {
        auto s = pr.start[i], l = pr.limit[i], st = pr.strides[i];
        if (st < 1) fail(p, fmt::format("stride {} on axis {} must be positive", st, i));
        if (s < 0 || s > l || l > a.shape[i])
          fail(p, fmt::format("slice [{}:{}] is out of range for axis {} of {}", s, l, i, a.str()));
        out.push_back((l - s + st - 1) / st);
      }
      return {{a.dtype, out}};
    }
    case Prim::rev: check_axes_unique(p, pr.axes, nd, a); return {a};
    case Prim::concatenate: {
      if (in.empty()) fail(p, "needs at least one operand");
      if (pr.axis < 0 || pr.axis >= static_cast<std::int64_t>(nd))
        fail(p, fmt::format("axis {} is out of bounds for {}", pr.axis, a.str()));
      Shape out = a.shape;
      out[pr.axis] = 0;
      for (auto& b : in) {
        if (b.dtype != a.dtype || b.ndim() != nd) fail(p, "operands differ in dtype or rank: " + operands(in));
        for (std::size_t i = 0; i < nd; ++i)
          if (static_cast<std::int64_t>(i) != pr.axis && b.shape[i] != a.shape[i])
            fail(p, fmt::format("operands differ outside axis {}: {}", pr.axis, operands(in)));
        out[pr.axis] += b.shape[pr.axis];
      }
      return {{a.dtype, out}};
    }
    case Prim::pad: {
      if (pr.lo.size() != nd || pr.hi.size() != nd)
        fail(p, fmt::format("padding must have one entry per dimension of {}", a.str()));
      Shape out = a.shape;
      for (std::size_t i = 0; i < nd; ++i) {
        if (pr.lo[i] < 0 || pr.hi[i] < 0) fail(p, fmt::format("negative padding on axis {} of {}", i, a.str()));
        out[i] += pr.lo[i] + pr.hi[i];
      }
      return {{a.dtype, out}};
    }
    default: break;  // only movement primitives reach here; abstract_eval's switch is total
  }
  fail(p, "not a movement primitive");
}

}  // namespace

namespace {

// reduce_sum/prod/max/min and argmax/argmin: the operand's shape without the reduced axes.
std::vector<AVal> reduction_aval(Prim p, const AVal& a, const PrimParams& pr) {
  if (p == Prim::argmax || p == Prim::argmin) {
    check_axes_unique(p, {pr.axis}, a.ndim(), a);
    if (a.shape[pr.axis] == 0) fail(p, fmt::format("empty axis {} of {}", pr.axis, a.str()));
    Shape out = a.shape;
    out.erase(out.begin() + pr.axis);
    return {{DType::int32, out}};
  }
  if (p == Prim::reduce_sum || p == Prim::reduce_prod) require_numeric(p, a);
  check_axes_unique(p, pr.axes, a.ndim(), a);
  Shape out;
  for (std::size_t i = 0; i < a.ndim(); ++i)
    if (std::find(pr.axes.begin(), pr.axes.end(), i) == pr.axes.end())
      out.push_back(a.shape[i]);
    else if ((p == Prim::reduce_max || p == Prim::reduce_min) && a.shape[i] == 0)
      fail(p, fmt::format("zero-size axis {} of {} has no identity", i, a.str()));
  return {{a.dtype, out}};
}

std::vector<AVal> iota_aval(Prim p, const PrimParams& pr) {
  if (pr.dtype == DType::bool_) fail(p, "dtype must be numeric");
  for (auto d : pr.shape)
    if (d < 0) fail(p, fmt::format("negative dimension in shape {}", shape_str(pr.shape)));
  if (pr.axis < 0 || pr.axis >= static_cast<std::int64_t>(pr.shape.size()))
    fail(p, fmt::format("dimension {} is out of bounds for shape {}", pr.axis, shape_str(pr.shape)));
  return {{pr.dtype, pr.shape}};
}

// lax.scan: operands (consts, init, xs) against the body's inputs; carries in and out agree.
std::vector<AVal> scan_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  if (!pr.body) fail(p, "missing body");
  const auto bin = pr.body->in_avals(), bout = pr.body->out_avals();
  const std::size_t nc = pr.num_consts, nk = pr.num_carry;
  if (in.size() != bin.size() || bout.size() < nk)
    fail(p, fmt::format("{} operands for a body of {} inputs", in.size(), bin.size()));
  std::vector<AVal> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    AVal want = bin[i];
    if (i >= nc + nk) want.shape.insert(want.shape.begin(), pr.length);
    if (!(in[i] == want)) fail(p, fmt::format("operand {} is {}, the body expects {}", i, in[i].str(), want.str()));
  }
  for (std::size_t i = 0; i < bout.size(); ++i) {
    AVal o = bout[i];
    if (i < nk) {
      if (!(o == bin[nc + i]))
        fail(p, fmt::format("the body returns carry {} as {} but takes it as {}", i, o.str(), bin[nc + i].str()));
    } else {
      o.shape.insert(o.shape.begin(), pr.length);
    }
    out.push_back(o);
  }
  return out;
}

// cond: an int32[] index, then operands every branch takes; every branch returns branch 0's types.
std::vector<AVal> cond_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  if (pr.branches.empty()) fail(p, "no branches");
  if (in.empty() || !(in[0] == AVal{DType::int32, {}}))
    fail(p, fmt::format("the index must be int32[], got {}", in.empty() ? "nothing" : in[0].str()));
  const std::vector<AVal> ops(in.begin() + 1, in.end());
  const auto out = pr.branches[0]->out_avals();
  for (std::size_t k = 0; k < pr.branches.size(); ++k) {
    if (!pr.branches[k]) fail(p, "a missing branch");
    if (pr.branches[k]->in_avals() != ops) fail(p, fmt::format("branch {} does not take the operands' types", k));
    if (pr.branches[k]->out_avals() != out) fail(p, fmt::format("branch {} returns other types than branch 0", k));
  }
  return out;
}

// while_loop: (cond consts, body consts, carry); cond maps to bool[], body keeps the carry's types.
std::vector<AVal> while_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  if (!pr.body || !pr.cond) fail(p, "missing body or cond");
  const auto cin = pr.cond->in_avals(), cout = pr.cond->out_avals(), bin = pr.body->in_avals(),
             bout = pr.body->out_avals();
  const std::size_t cc = pr.cond_consts, bc = pr.num_consts;
  if (in.size() < cc + bc) fail(p, fmt::format("{} operands for {} + {} constants", in.size(), cc, bc));
  const std::vector<AVal> carry(in.begin() + static_cast<std::ptrdiff_t>(cc + bc), in.end());
  std::vector<AVal> want_c(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cc)),
      want_b(in.begin() + static_cast<std::ptrdiff_t>(cc), in.begin() + static_cast<std::ptrdiff_t>(cc + bc));
  want_c.insert(want_c.end(), carry.begin(), carry.end());
  want_b.insert(want_b.end(), carry.begin(), carry.end());
  if (cin != want_c || cout.size() != 1 || !(cout[0] == AVal{DType::bool_, {}}))
    fail(p, "cond must map (cond consts, carry) to bool[]");
  if (bin != want_b || bout != carry) fail(p, "body must map (body consts, carry) to a carry of the same types");
  return carry;
}

// associative_scan: elements of one length along the axis, combined by the body one slice at a time.
std::vector<AVal> associative_scan_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  if (!pr.body) fail(p, "missing body");
  const auto bin = pr.body->in_avals(), bout = pr.body->out_avals();
  const std::size_t nc = pr.num_consts, k = in.size() - std::min(in.size(), nc);
  if (k == 0 || bin.size() != nc + 2 * k || bout.size() != k)
    fail(p, fmt::format("{} operands for a body of {} inputs and {} outputs", in.size(), bin.size(), bout.size()));
  const std::int64_t n = in[nc].ndim() > static_cast<std::size_t>(pr.axis) ? in[nc].shape[pr.axis] : -1;
  for (std::size_t l = 0; l < k; ++l) {
    AVal e = in[nc + l];
    if (e.ndim() <= static_cast<std::size_t>(pr.axis) || e.shape[pr.axis] != n)
      fail(p, fmt::format("element {} is {}, not of length {} along axis {}", l, e.str(), n, pr.axis));
    e.shape[pr.axis] = 1;
    if (!(bin[nc + l] == e) || !(bin[nc + k + l] == e) || !(bout[l] == e))
      fail(p, fmt::format("the body combines {} elements, operand {} is {}", bin[nc + l].str(), l, in[nc + l].str()));
  }
  return std::vector<AVal>(in.begin() + nc, in.end());
}

// lu (factors, pivots, permutation) and triangular_solve (the right-hand side's type).
std::vector<AVal> linalg_aval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  if (p == Prim::lu) {
    require_square(p, in[0]);
    Shape batch(in[0].shape.begin(), in[0].shape.end() - 2);
    return {in[0], in[0], {in[0].dtype, batch}};
  }
  const AVal &a = in[0], &b = in[1];
  require_square(p, a);
  if (b.dtype != a.dtype || b.ndim() != a.ndim()) fail(p, "operands differ in dtype or rank: " + operands(in));
  const std::size_t nd = a.ndim();
  if (!std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin()))
    fail(p, "batch dimensions differ: " + operands(in));
  const auto n = a.shape[nd - 1];
  if ((pr.left_side ? b.shape[nd - 2] : b.shape[nd - 1]) != n)
    fail(p, fmt::format("{} does not match the {} matrix {}", b.str(), pr.left_side ? "left" : "right", a.str()));
  return {b};
}

}  // namespace

std::vector<AVal> abstract_eval(Prim p, const std::vector<AVal>& in, const PrimParams& pr) {
  const int arity = prim_arity(p);
  if (arity >= 0 && static_cast<int>(in.size()) != arity)
    fail(p, fmt::format("expected {} operands, got {}", arity, in.size()));
  switch (p) {
  JX_CASES_TRANSCENDENTAL:
    require_float(p, in[0]);
    return {in[0]};
    case Prim::neg:
    case Prim::abs:
    case Prim::sign: require_numeric(p, in[0]); return {in[0]};
    case Prim::logical_not:
      if (in[0].dtype != DType::bool_) fail(p, "expected a bool operand, got " + in[0].str());
      return {in[0]};
    case Prim::isnan:
    case Prim::isfinite: require_float(p, in[0]); return {{DType::bool_, in[0].shape}};
    case Prim::convert: return {{pr.dtype, in[0].shape}};
    case Prim::stop_gradient: return {in[0]};
    case Prim::add:
    case Prim::sub:
    case Prim::mul:
    case Prim::max:
    case Prim::min:
      require_same(p, in);
      require_numeric(p, in[0]);
      return {in[0]};
    case Prim::div:
    case Prim::pow:
      require_same(p, in);
      require_float(p, in[0]);
      return {in[0]};
    JX_CASES_COMPARISON:
      require_same(p, in);
      return {{DType::bool_, in[0].shape}};
    case Prim::logical_and:
    case Prim::logical_or:
      require_same(p, in);
      if (in[0].dtype != DType::bool_) fail(p, "expected bool operands, got " + operands(in));
      return {in[0]};
    case Prim::select:
      if (in[0].dtype != DType::bool_) fail(p, "predicate must be bool, got " + in[0].str());
      if (in[0].shape != in[1].shape) fail(p, "operands differ: " + operands(in));
      require_same(p, {in[1], in[2]});
      return {in[1]};
    case Prim::reduce_sum:
    case Prim::reduce_prod:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::argmax:
    case Prim::argmin: return reduction_aval(p, in[0], pr);
    case Prim::dot_general:
      return dot_general_aval(p, in[0], in[1], pr);
    JX_CASES_MOVEMENT:
      return movement_aval(p, in, pr);
    case Prim::iota: return iota_aval(p, pr);
    case Prim::cholesky:
    case Prim::inv: require_square(p, in[0]); return {in[0]};
    case Prim::scan: return scan_aval(p, in, pr);
    case Prim::cond: return cond_aval(p, in, pr);
    case Prim::while_loop: return while_aval(p, in, pr);
    case Prim::associative_scan: return associative_scan_aval(p, in, pr);
    case Prim::lu:
    case Prim::triangular_solve: return linalg_aval(p, in, pr);
  }
  fail(p, "unknown primitive");
}

}  // namespace jx
