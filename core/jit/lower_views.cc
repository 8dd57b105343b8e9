// View rewrites of the lowering's expression trees: remap (transpose, broadcast), restride
// (slice, rev, windows), reshape (strides when contiguous, else int32 index arithmetic), clamp.
#include <optional>

#include "core/jit/lower_expr.h"

namespace jx::lower_detail {

EP index_of(const Shape& s, std::int64_t dim) {
  Expr i{Expr::K::iota, DType::int32, s};
  i.dim = static_cast<int>(dim);
  return make(std::move(i));
}

namespace {
// ---- int32 index arithmetic (views no affine map expresses) ----

constexpr std::int64_t kIndexLimit = std::int64_t{1} << 31;  // index trees are int32

EP int_op(Prim p, const EP& a, std::int64_t c) {
  return alu(p, DType::int32, a->shape, {a, constant(static_cast<double>(c), DType::int32, a->shape)});
}
EP int_add(const EP& a, const EP& b) { return a ? alu(Prim::add, DType::int32, b->shape, {a, b}) : b; }

// Σ_d c_d · i_d + c0 over the dims of s (terms with c_d = 0 left out).
EP affine_index(const Shape& s, std::int64_t c0, const std::vector<std::int64_t>& c) {
  EP r;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (c[d] != 0 && s[d] != 1) {
      EP i = index_of(s, static_cast<std::int64_t>(d));
      r = int_add(r, c[d] == 1 ? i : int_op(Prim::mul, i, c[d]));
    }
  if (!r || c0 != 0) r = int_add(r, constant(static_cast<double>(c0), DType::int32, s));
  return r;
}

// A strided load as the same load with an explicit element index.
EP as_indexed(const Expr& l) {
  Expr r = l;
  r.indexed = true;
  r.args = {affine_index(l.shape, l.offset, l.strides)};
  return make(std::move(r));
}

// Index i_dim of shape `os` read at the elements of shape `ns` (same count, row-major order):
// (flat / stride_dim) mod os[dim], flat = Σ i_k · rowstride_k over ns.
EP reshaped_iota(const Expr& e, const Shape& ns) {
  const auto rs = row_major_strides(ns), os_st = row_major_strides(e.shape);
  EP v = affine_index(ns, 0, rs);
  if (os_st[e.dim] != 1) v = int_op(Prim::div, v, os_st[e.dim]);
  if (e.dim > 0)
    v = alu(Prim::sub, DType::int32, ns, {v, int_op(Prim::mul, int_op(Prim::div, v, e.shape[e.dim]), e.shape[e.dim])});
  return e.dtype == DType::int32 ? v : alu(Prim::convert, e.dtype, ns, {v});
}

}  // namespace

// ---- view rewrites (nullptr: not expressible, the caller materializes) ----

// New dim dmap[d] takes old dim d; other new dims broadcast.
EP remap(const EP& e, const Shape& ns, const std::vector<std::int64_t>& dmap, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load:
      if (e->indexed) {
        if (!(r.args[0] = remap(e->args[0], ns, dmap, memo))) return nullptr;
        break;
      }
      r.strides.assign(ns.size(), 0);
      for (std::size_t d = 0; d < dmap.size(); ++d)
        if (e->shape[d] != 1) r.strides[dmap[d]] = e->strides[d];
      break;
    case Expr::K::constant: break;
    case Expr::K::iota:
      if (e->shape[e->dim] == 1) return memo[e.get()] = constant(0.0, e->dtype, ns);
      r.dim = static_cast<int>(dmap[e->dim]);
      break;
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = remap(a, ns, dmap, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
}

// x[start + step·i] per axis (rev: start = n-1, step = -1).
EP restride(const EP& e, const Shape& ns, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step,
            Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load:
      if (e->indexed) {
        if (!(r.args[0] = restride(e->args[0], ns, start, step, memo))) return nullptr;
        break;
      }
      for (std::size_t d = 0; d < ns.size(); ++d) {
        r.offset += start[d] * e->strides[d];
        r.strides[d] = e->strides[d] * step[d];
      }
      break;
    case Expr::K::constant: break;
    case Expr::K::iota: {
      const int d = e->dim;
      if (start[d] == 0 && step[d] == 1) break;
      EP i = make(r);
      EP scaled =
          step[d] == 1 ? i : alu(Prim::mul, e->dtype, ns, {i, constant(static_cast<double>(step[d]), e->dtype, ns)});
      return memo[e.get()] =
                 alu(Prim::add, e->dtype, ns, {scaled, constant(static_cast<double>(start[d]), e->dtype, ns)});
    }
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = restride(a, ns, start, step, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
}

namespace {
// Strides of a view of shape `os`/`ost` reshaped to `ns` without a copy, if possible (the
// old dims merged into each new dim must be contiguous with each other).
std::optional<std::vector<std::int64_t>> reshape_strides(const Shape& os, const std::vector<std::int64_t>& ost,
                                                         const Shape& ns) {
  std::vector<std::int64_t> out(ns.size(), 0);
  if (numel(os) == 0) return out;
  Shape o, ot;
  for (std::size_t i = 0; i < os.size(); ++i)
    if (os[i] != 1) {
      o.push_back(os[i]);
      ot.push_back(ost[i]);
    }
  std::vector<std::size_t> nidx;
  Shape n;
  for (std::size_t i = 0; i < ns.size(); ++i)
    if (ns[i] != 1) {
      n.push_back(ns[i]);
      nidx.push_back(i);
    }
  std::vector<std::int64_t> nt(n.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < n.size() && oi < o.size()) {
    std::int64_t np = n[ni], op = o[oi];
    while (np != op) {
      if (np < op)
        np *= n[nj++];
      else
        op *= o[oj++];
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)
      if (ot[k] != o[k + 1] * ot[k + 1]) return std::nullopt;
    nt[nj - 1] = ot[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) nt[k - 1] = nt[k] * n[k];
    ni = nj++;
    oi = oj++;
  }
  for (std::size_t k = 0; k < n.size(); ++k) out[nidx[k]] = nt[k];
  return out;
}

}  // namespace

EP reshape_e(const EP& e, const Shape& ns, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load: {
      if (e->indexed) {
        if (!(r.args[0] = reshape_e(e->args[0], ns, memo))) return nullptr;
        break;
      }
      auto st = reshape_strides(e->shape, e->strides, ns);
      if (!st) {
        if (numel(ns) >= kIndexLimit) return nullptr;
        return memo[e.get()] = reshape_e(memo.keep.emplace_back(as_indexed(*e)), ns, memo);
      }
      r.strides = *st;
      break;
    }
    case Expr::K::constant: break;
    case Expr::K::iota:
      if (e->shape == ns) break;
      if (numel(ns) >= kIndexLimit) return nullptr;
      return memo[e.get()] = reshaped_iota(*e, ns);
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = reshape_e(a, ns, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
}

// The same tree with every load marked as clamped (see KLoad::clamp).
EP clamped(const EP& e, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  if (e->k == Expr::K::constant || e->k == Expr::K::iota || (e->k == Expr::K::load && e->clamp)) return e;
  Expr r = *e;
  r.clamp = r.k == Expr::K::load;
  for (EP& a : r.args) a = clamped(a, memo);
  return memo[e.get()] = make(std::move(r));
}

}  // namespace jx::lower_detail
