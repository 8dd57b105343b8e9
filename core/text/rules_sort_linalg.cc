// sort (by ranks: O(n^2) comparisons along the sorted axis), JAX's lu (pivots and permutation
// from jx's permutation matrix) and custom_linear_solve (its solve jaxpr, differentiated
// through).
#include <fmt/format.h>
#include <map>

#include "core/text/rules.h"

namespace jx::text {
namespace {

using Ints = std::vector<std::int64_t>;

Array move_last(const Array& x, std::int64_t axis) {
  Ints perm;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(x.ndim()); ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  return lax::transpose(x, perm);
}
Array move_back(const Array& x, std::int64_t axis) {
  Ints perm;
  const std::int64_t last = static_cast<std::int64_t>(x.ndim()) - 1;
  for (std::int64_t i = 0, k = 0; i <= last; ++i) perm.push_back(i == axis ? last : k++);
  return lax::transpose(x, perm);
}

// x [..., n] as [..., n, n] varying along axis `along` (n-2: the i index, n-1: the j index).
Array pairs(const Array& x, bool along_j) {
  Shape s = x.shape();
  s.push_back(s.back());
  Ints dims;
  for (std::size_t i = 0; i + 1 < x.ndim(); ++i) dims.push_back(static_cast<std::int64_t>(i));
  dims.push_back(static_cast<std::int64_t>(x.ndim()) - (along_j ? 0 : 1));
  return lax::broadcast_in_dim(x, s, dims);
}

// Total order of JAX's sort: nan after everything.
Array less(const Array& a, const Array& b) {
  if (!is_floating(a.dtype())) return lax::lt(a, b);
  return lax::logical_or(lax::lt(a, b), lax::logical_and(lax::logical_not(lax::isnan(a)), lax::isnan(b)));
}
Array same(const Array& a, const Array& b) {
  if (!is_floating(a.dtype())) return lax::eq(a, b);
  return lax::logical_or(lax::eq(a, b), lax::logical_and(lax::isnan(a), lax::isnan(b)));
}

std::vector<Array> sort(Call& c) {
  const std::int64_t axis = c.int_param("dimension");
  const std::size_t keys = c.opt("num_keys") ? static_cast<std::size_t>(c.count_param("num_keys")) : 1;
  std::vector<Array> ops;
  for (const Array& x : c.in) ops.push_back(move_last(x.dtype() == DType::bool_ ? cast(x, DType::int32) : x, axis));
  const std::int64_t n = ops.at(0).shape().back(), last = static_cast<std::int64_t>(ops[0].ndim());
  // before[..., i, j]: element j sorts before element i (keys lexicographic, then position: stable)
  const Array ii = lax::iota(DType::int32, pairs(ops[0], true).shape(), last - 1),
              jj = lax::iota(DType::int32, ii.shape(), last);
  Array before = lax::lt(jj, ii);
  for (std::size_t k = keys; k-- > 0;) {
    const Array xi = pairs(ops.at(k), false), xj = pairs(ops[k], true);
    before = lax::logical_or(less(xj, xi), lax::logical_and(same(xj, xi), before));
  }
  const Array rank = lax::reduce_sum(cast(before, DType::int32), {last});  // [..., n(i)]
  // out[..., k] = the element whose rank is k
  const Array hit = lax::eq(pairs(rank, true), lax::iota(DType::int32, ii.shape(), last - 1));  // [..., k, i]
  std::vector<Array> out;
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const Array x = pairs(ops[o], true);
    Array r = lax::reduce_sum(lax::select(hit, x, bcast(scalar(0, x.dtype()), x.shape())), {last});
    if (c.in.at(o).dtype() == DType::bool_) r = cast(r, DType::bool_);
    out.push_back(move_back(r, axis));
  }
  (void)n;
  return out;
}

// JAX: lu(a) -> (packed LU, pivots, permutation) with a[perm] = L U; jx: (packed, P, sign) with
// a = P L U, so perm[i] = argmax_j P[j, i]. pivots are LAPACK's row swaps: at step k the row
// holding perm[k] in the order reached so far swaps with row k.
std::vector<Array> lu(Call& c) {
  auto [a, p, d] = lax::lu(c.in.at(0));
  if (c.out.size() == 3 && c.out[1].shape.size() + 1 == c.in.at(0).ndim()) {
    const std::int64_t n = a.shape().back(), nd = static_cast<std::int64_t>(p.ndim());
    const Array perm = cast(lax::argmax(p, nd - 2), DType::int32);
    Shape row = perm.shape();
    Array cur = lax::iota(DType::int32, row, nd - 2);
    std::vector<Array> piv;
    const Array idx = cur;
    for (std::int64_t k = 0; k < n; ++k) {
      Shape one = row;
      one.back() = 1;
      const Array pk = lax::slice_in_dim(perm, k, k + 1, 1, nd - 2);
      const Array pos = cast(lax::argmax(cast(lax::eq(cur, bcast(pk, row)), DType::int32), nd - 2), DType::int32);
      piv.push_back(lax::reshape(pos, one));
      const Array ck = bcast(lax::slice_in_dim(cur, k, k + 1, 1, nd - 2), row);
      const Array at_pos = lax::eq(idx, bcast(lax::reshape(pos, one), row));
      cur = lax::select(lax::eq(idx, full_like(idx, static_cast<double>(k))), bcast(pk, row),
                        lax::select(at_pos, ck, cur));
    }
    return {a, lax::concatenate(piv, nd - 2), perm};
  }
  if (c.out.size() != 3) c.fail("lu gives three results");
  return {a, p, d};
}

// custom_linear_solve[const_lengths=_LinearSolveTuple(matvec=.., vecmat=.., solve=..,
// transpose_solve=..) jaxprs=_LinearSolveTuple(...)] consts... b...: x = A⁻¹ b, A = matvec.
// Its derivative is implicit (dx = A⁻¹ (db − dA x)), not the solver's: with x* = solve(b) held
// constant, y = x* − S (A x* − b), S the solve with its constants held too, has y = x* (one
// refinement step) and dy = A⁻¹ (db − dA x*), linear in b through S (which transposes).
std::vector<Array> custom_linear_solve(Call& c) {
  const Value &lens = c.param("const_lengths"), &js = c.param("jaxprs");
  std::size_t at = 0;
  std::map<std::string, std::pair<std::size_t, std::size_t>> span;
  for (const char* k : {"matvec", "vecmat", "solve", "transpose_solve"}) {
    const Value* v = lens.kwarg(k);
    const std::int64_t n0 = v ? c.ints_of(*v).at(0) : 0;
    if (n0 < 0 || n0 > static_cast<std::int64_t>(c.in.size()))
      c.fail(fmt::format("const_lengths.{} = {} does not count operands", k, n0));
    const std::size_t n = static_cast<std::size_t>(n0);
    span[k] = {at, n};
    at += n;
  }
  if (at > c.in.size()) c.fail("const_lengths add up to more than the operands");
  auto consts = [&](const char* k, bool held) {
    std::vector<Array> v;
    for (std::size_t i = 0; i < span[k].second; ++i)
      v.push_back(held ? lax::stop_gradient(c.in[span[k].first + i]) : c.in[span[k].first + i]);
    return v;
  };
  auto jaxpr_of = [&](const char* k) -> const Jaxpr& {
    const Value* v = js.kwarg(k);
    if (!v || v->kind != Value::Kind::jaxpr) c.fail(fmt::format("jaxprs has no {} jaxpr", k));
    return *v->jaxpr;
  };
  const std::vector<Array> b(c.in.begin() + static_cast<std::ptrdiff_t>(at), c.in.end());
  auto apply = [&](const char* k, bool held, const std::vector<Array>& x) {
    std::vector<Array> args = consts(k, held);
    args.insert(args.end(), x.begin(), x.end());
    return c.sub(jaxpr_of(k), args);
  };
  std::vector<Array> xs = apply("solve", true, b);
  for (Array& x : xs) x = lax::stop_gradient(x);
  std::vector<Array> r = apply("matvec", false, xs);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = lax::sub(r[i], b.at(i));
  std::vector<Array> d = apply("solve", true, r), y;
  for (std::size_t i = 0; i < xs.size(); ++i) y.push_back(lax::sub(xs[i], d.at(i)));
  return y;
}

}  // namespace

void add_sort_linalg_rules(RuleTable& t) {
  t["sort"] = sort;
  t["lu"] = lu;
  t["custom_linear_solve"] = custom_linear_solve;
}

}  // namespace jx::text
