// Indexing with traced indices, as compositions of jx primitives: a start index s along an axis
// of size n selects with the mask M[o, j] = (j == s + o) (o < the slice size). Taking a slice is
// sum_j select(M[o, j], x[j], 0) and putting one is sum_o select(M[o, j], u[o], 0): exact (one
// term is nonzero; select never multiplies, so inf and nan elsewhere stay out), and every
// backend, jvp, transpose and vmap rule applies. Cost: O(slice × n) per indexed axis.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>

#include "core/text/rules.h"

namespace jx::text {
namespace {

using Ints = std::vector<std::int64_t>;

Ints iota_ints(std::size_t n, std::int64_t from = 0) {
  Ints v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<std::int64_t>(i);
  return v;
}

// Moves axis `from` to position `to`.
Array move_axis(const Array& x, std::int64_t from, std::int64_t to) {
  if (from == to) return x;
  Ints perm;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(x.ndim()); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return lax::transpose(x, perm);
}

// M[B..., o, j] = (j == start[B] + o), shape B + [s, n] (transposed: B + [n, s]); start is
// int32 of shape B.
Array onehot(const Array& start, std::int64_t s, std::int64_t n, bool transposed = false) {
  Shape sh = start.shape();
  const std::size_t nb = sh.size();
  sh.push_back(transposed ? n : s);
  sh.push_back(transposed ? s : n);
  const Array o = lax::iota(DType::int32, sh, static_cast<std::int64_t>(transposed ? nb + 1 : nb));
  const Array j = lax::iota(DType::int32, sh, static_cast<std::int64_t>(transposed ? nb : nb + 1));
  return lax::eq(j, lax::add(lax::broadcast_in_dim(start, sh, iota_ints(nb)), o));
}

// Along `axis` (among the operand dims, after nb batch dims) of x, whose size there is m: take
// [start, start + k) (put = false: out[o] = sum_j M[o, j] x[j]), or place x at [start, start + m)
// of an axis widened to k (put = true: out[j] = sum_o M[o, j] x[o]).
Array along(const Array& x, std::size_t nb, std::int64_t axis, const Array& start, std::int64_t k, bool put) {
  const std::int64_t ax = static_cast<std::int64_t>(nb) + axis, last = static_cast<std::int64_t>(x.ndim()) - 1;
  const Array t = move_axis(x, ax, last);  // B, R..., m
  const std::int64_t m = t.shape().back();
  Shape big = t.shape();
  big.insert(big.end() - 1, k);  // B, R..., k, m
  const auto nbig = static_cast<std::int64_t>(big.size());
  Ints tdims = iota_ints(t.ndim() - 1), mdims = iota_ints(nb);
  tdims.push_back(nbig - 1);
  mdims.push_back(nbig - 2);
  mdims.push_back(nbig - 1);
  const Array mask = lax::broadcast_in_dim(put ? onehot(start, m, k, true) : onehot(start, k, m), big, mdims);
  const Array picked = lax::select(mask, lax::broadcast_in_dim(t, big, tdims), bcast(scalar(0, t.dtype()), big));
  return move_axis(lax::reduce_sum(picked, {nbig - 1}), last, ax);
}
Array take_along(const Array& x, std::size_t nb, std::int64_t axis, const Array& start, std::int64_t s) {
  return along(x, nb, axis, start, s, false);
}
Array put_along(const Array& u, std::size_t nb, std::int64_t axis, const Array& start, std::int64_t n) {
  return along(u, nb, axis, start, n, true);
}

Array clamp_start(const Array& s, std::int64_t hi) {
  return lax::min(lax::max(s, full_like(s, 0.0)), full_like(s, static_cast<double>(std::max<std::int64_t>(hi, 0))));
}

Ints field(const Call& c, const Value& dn, const char* name) {
  const Value* v = dn.kwarg(name);
  return v ? c.ints_of(*v) : Ints{};
}

enum class Mode { clip, fill, promise };
Mode mode_of(const Call& c) {
  const Value* m = c.opt("mode");
  if (!m) return Mode::fill;
  const std::string& s = m->text;
  if (s.find("CLIP") != std::string::npos || s == "1" || s == "clip") return Mode::clip;
  if (s.find("PROMISE") != std::string::npos || s == "2") return Mode::promise;
  return Mode::fill;
}

// Per indexed operand dim: its start (int32, batch-shaped), from the index vector or, for an
// operand batching dim, the position along the paired index batch dim.
struct Indexed {
  std::int64_t dim;
  Array start;
};

std::vector<Indexed> starts_of(const Call& c, const Array& idx, const Ints& to_operand, const Ints& obd,
                               const Ints& ibd, std::size_t operand_rank) {
  const std::size_t nb = idx.ndim() - 1;
  for (std::int64_t d : to_operand)
    if (d < 0 || d >= static_cast<std::int64_t>(operand_rank))
      c.fail(fmt::format("index map names operand dimension {} of a rank-{} operand", d, operand_rank));
  for (std::int64_t d : obd)
    if (d < 0 || d >= static_cast<std::int64_t>(operand_rank))
      c.fail(fmt::format("batching dimension {} of a rank-{} operand", d, operand_rank));
  if (obd.size() != ibd.size()) c.fail("operand and index batching dimensions differ in number");
  if (static_cast<std::int64_t>(to_operand.size()) != idx.shape().back())
    c.fail(fmt::format("the index vector has {} entries, the index map {}", idx.shape().back(), to_operand.size()));
  Shape bshape(idx.shape().begin(), idx.shape().end() - 1);
  std::vector<Indexed> v;
  for (std::size_t k = 0; k < to_operand.size(); ++k) {
    Ints lo(idx.ndim(), 0), hi = idx.shape();
    lo.back() = static_cast<std::int64_t>(k);
    hi.back() = static_cast<std::int64_t>(k) + 1;
    v.push_back({to_operand[k], cast(lax::reshape(lax::slice(idx, lo, hi), bshape), DType::int32)});
  }
  for (std::size_t i = 0; i < obd.size(); ++i) {
    if (ibd.at(i) >= static_cast<std::int64_t>(nb)) c.fail("an indices batching dim is out of range");
    v.push_back({obd[i], lax::iota(DType::int32, bshape, ibd[i])});
  }
  return v;
}

double default_fill(DType d) {
  switch (d) {
    case DType::float32:
    case DType::float64: return NAN;
    case DType::int32: return std::numeric_limits<std::int32_t>::min();
    case DType::bool_: return 1;
  }
  return 0;
}

std::vector<Array> gather(Call& c) {
  const Value& dn = c.param("dimension_numbers");
  const Ints offset = field(c, dn, "offset_dims"), collapsed = field(c, dn, "collapsed_slice_dims");
  const Ints obd = field(c, dn, "operand_batching_dims"), ibd = field(c, dn, "start_indices_batching_dims");
  const Ints sizes = c.ints("slice_sizes");
  const Array x0 = c.in.at(0), idx = c.in.at(1);
  const bool is_bool = x0.dtype() == DType::bool_;
  Array x = is_bool ? cast(x0, DType::int32) : x0;
  if (idx.ndim() == 0) c.fail("the indices need an index vector dimension (last)");
  const std::size_t nb = idx.ndim() - 1;
  const Mode mode = mode_of(c);
  auto ind = starts_of(c, idx, field(c, dn, "start_index_map"), obd, ibd, x.ndim());
  Ints lim = x.shape();  // dims nobody indexes: a static leading slice
  std::vector<bool> indexed(x.ndim(), false);
  for (auto& i : ind) indexed.at(i.dim) = true;
  for (std::size_t d = 0; d < x.ndim(); ++d)
    if (!indexed[d]) lim[d] = sizes.at(d);
  x = lax::slice(x, Ints(x.ndim(), 0), lim);
  Shape bshape(idx.shape().begin(), idx.shape().end() - 1), full = bshape;
  full.insert(full.end(), x.shape().begin(), x.shape().end());
  Array t = lax::broadcast_in_dim(x, full, iota_ints(x.ndim(), static_cast<std::int64_t>(nb)));
  std::optional<Array> ok;
  for (auto& i : ind) {
    const std::int64_t hi = x0.shape()[i.dim] - sizes.at(i.dim);
    if (mode == Mode::fill) {
      const Array in =
          lax::logical_and(lax::ge(i.start, full_like(i.start, 0.0)), lax::le(i.start, full_like(i.start, double(hi))));
      ok = ok ? lax::logical_and(*ok, in) : in;
    }
    t = take_along(t, nb, i.dim, clamp_start(i.start, hi), sizes.at(i.dim));
  }
  // drop collapsed and operand-batching dims, then place batch and offset dims
  Shape kept = bshape;
  for (std::size_t d = 0; d < x.ndim(); ++d)
    if (std::find(collapsed.begin(), collapsed.end(), d) == collapsed.end() &&
        std::find(obd.begin(), obd.end(), d) == obd.end())
      kept.push_back(sizes.at(d));
  t = lax::reshape(t, kept);
  Ints perm;
  std::size_t nextb = 0, nexto = nb;
  for (std::size_t p = 0; p < kept.size(); ++p)
    perm.push_back(std::find(offset.begin(), offset.end(), p) != offset.end() ? nexto++ : nextb++);
  t = lax::transpose(t, perm);
  if (ok) {
    Ints bdims;
    for (std::size_t p = 0; p < kept.size(); ++p)
      if (std::find(offset.begin(), offset.end(), p) == offset.end()) bdims.push_back(static_cast<std::int64_t>(p));
    const Value* fv = c.opt("fill_value");
    const double fill = fv && !fv->is_none() ? std::stod(fv->text) : default_fill(x0.dtype());
    t = lax::select(lax::broadcast_in_dim(*ok, t.shape(), bdims), t,
                    bcast(scalar(is_bool ? 1 : fill, t.dtype()), t.shape()));
  }
  return {is_bool ? cast(t, DType::bool_) : t};
}

std::vector<Array> dynamic_slice(Call& c) {
  const Array x = c.in.at(0);
  const Ints sizes = c.ints("slice_sizes");
  Array t = x;
  for (std::size_t d = 0; d < x.ndim(); ++d) {
    const Array s = clamp_start(cast(c.in.at(1 + d), DType::int32), x.shape()[d] - sizes.at(d));
    if (sizes[d] == x.shape()[d]) continue;
    const bool is_bool = t.dtype() == DType::bool_;
    t = take_along(is_bool ? cast(t, DType::int32) : t, 0, static_cast<std::int64_t>(d), s, sizes[d]);
    if (is_bool) t = cast(t, DType::bool_);
  }
  return {t};
}

std::vector<Array> dynamic_update_slice(Call& c) {
  const Array x = c.in.at(0), u = c.in.at(1);
  if (u.ndim() != x.ndim()) c.fail("the update must have the operand's rank");
  const bool is_bool = x.dtype() == DType::bool_;
  Array v = is_bool ? cast(u, DType::int32) : u, hit = bcast(scalar(1, DType::int32), u.shape());
  for (std::size_t d = 0; d < x.ndim(); ++d) {
    const Array s = clamp_start(cast(c.in.at(2 + d), DType::int32), x.shape()[d] - u.shape()[d]);
    v = put_along(v, 0, static_cast<std::int64_t>(d), s, x.shape()[d]);
    hit = put_along(hit, 0, static_cast<std::int64_t>(d), s, x.shape()[d]);
  }
  const Array m = lax::ne(hit, full_like(hit, 0.0));
  return {lax::select(m, is_bool ? cast(v, DType::bool_) : v, x)};
}

// scatter-add / scatter: updates U (batch dims B, window dims) placed at the indexed starts;
// scatter keeps the operand where no update lands (with repeated indices JAX leaves the winner
// unspecified; here the updates add up).
enum class Combine { replace, add, mul, min, max };
std::vector<Array> scatter_common(Call& c, Combine how) {
  const Value& dn = c.param("dimension_numbers");
  const Ints window = field(c, dn, "update_window_dims"), inserted = field(c, dn, "inserted_window_dims");
  const Ints obd = field(c, dn, "operand_batching_dims"), ibd = field(c, dn, "scatter_indices_batching_dims");
  const Array x = c.in.at(0), idx = c.in.at(1), u0 = c.in.at(2);
  if (idx.ndim() == 0) c.fail("the indices need an index vector dimension (last)");
  const std::size_t nb = idx.ndim() - 1;
  const bool is_bool = x.dtype() == DType::bool_;
  Array u = is_bool ? cast(u0, DType::int32) : u0;
  Ints perm;  // U -> [B..., window...]
  for (std::size_t d = 0; d < u.ndim(); ++d)
    if (std::find(window.begin(), window.end(), d) == window.end()) perm.push_back(static_cast<std::int64_t>(d));
  perm.insert(perm.end(), window.begin(), window.end());
  u = lax::transpose(u, perm);
  if (u.ndim() < nb)
    c.fail(fmt::format("the updates have {} dimensions, fewer than the indices' {} batch dimensions", u.ndim(), nb));
  Shape wshape(u.shape().begin(), u.shape().begin() + static_cast<std::ptrdiff_t>(nb));
  std::size_t next = nb;
  for (std::size_t d = 0; d < x.ndim(); ++d) {
    const bool one = std::find(inserted.begin(), inserted.end(), d) != inserted.end() ||
                     std::find(obd.begin(), obd.end(), d) != obd.end();
    wshape.push_back(one ? 1 : u.shape().at(next++));
  }
  u = lax::reshape(u, wshape);
  Array hit = bcast(scalar(1, DType::int32), u.shape());
  auto ind = starts_of(c, idx, field(c, dn, "scatter_dims_to_operand_dims"), obd, ibd, x.ndim());
  std::vector<bool> indexed(x.ndim(), false);
  for (auto& i : ind) {
    indexed.at(i.dim) = true;
    const std::int64_t w = wshape[nb + i.dim], hi = x.shape()[i.dim] - w;
    if (mode_of(c) == Mode::fill) {  // out-of-bounds updates are dropped
      const Array in =
          lax::logical_and(lax::ge(i.start, full_like(i.start, 0.0)), lax::le(i.start, full_like(i.start, double(hi))));
      const Array inb = lax::broadcast_in_dim(in, u.shape(), iota_ints(nb));
      u = lax::select(inb, u, full_like(u, 0.0));
      hit = lax::select(inb, hit, full_like(hit, 0.0));
    }
    u = put_along(u, nb, i.dim, clamp_start(i.start, hi), x.shape()[i.dim]);
    hit = put_along(hit, nb, i.dim, clamp_start(i.start, hi), x.shape()[i.dim]);
  }
  Ints zeros(u.ndim(), 0), pad_hi(u.ndim(), 0);
  for (std::size_t d = 0; d < x.ndim(); ++d)
    if (!indexed[d]) pad_hi[nb + d] = x.shape()[d] - u.shape()[nb + d];
  u = lax::pad(u, zeros, pad_hi, 0.0);
  hit = lax::pad(hit, zeros, pad_hi, 0.0);
  if (how != Combine::add && how != Combine::replace) {  // each update where it lands, the identity elsewhere
    const double id = how == Combine::mul ? 1.0 : how == Combine::min ? INFINITY : -INFINITY;
    const double id_int = how == Combine::mul ? 1.0 : how == Combine::min ? 2147483647.0 : -2147483648.0;
    u = lax::select(lax::ne(hit, full_like(hit, 0.0)), u, full_like(u, is_floating(u.dtype()) ? id : id_int));
    const auto b = iota_ints(nb);
    u = how == Combine::mul   ? lax::reduce_prod(u, b)
        : how == Combine::min ? lax::reduce_min(u, b)
                              : lax::reduce_max(u, b);
    if (is_bool) u = cast(u, DType::bool_);
    const Array xs = is_bool ? cast(x, DType::int32) : x, us = is_bool ? cast(u, DType::int32) : u;
    const Array r = how == Combine::mul ? lax::mul(xs, us) : how == Combine::min ? lax::min(xs, us) : lax::max(xs, us);
    return {is_bool ? cast(r, DType::bool_) : r};
  }
  u = lax::reduce_sum(u, iota_ints(nb));
  hit = lax::reduce_sum(hit, iota_ints(nb));
  if (is_bool) u = cast(lax::ne(u, full_like(u, 0.0)), DType::bool_);
  if (how == Combine::add) return {is_bool ? lax::logical_or(x, u) : lax::add(x, u)};
  return {lax::select(lax::ne(hit, full_like(hit, 0.0)), u, x)};
}

}  // namespace

void add_index_rules(RuleTable& t) {
  t["gather"] = gather;
  t["scatter-add"] = t["scatter_add"] = [](Call& c) { return scatter_common(c, Combine::add); };
  t["scatter"] = [](Call& c) { return scatter_common(c, Combine::replace); };
  t["scatter-mul"] = t["scatter_mul"] = [](Call& c) { return scatter_common(c, Combine::mul); };
  t["scatter-min"] = t["scatter_min"] = [](Call& c) { return scatter_common(c, Combine::min); };
  t["scatter-max"] = t["scatter_max"] = [](Call& c) { return scatter_common(c, Combine::max); };
  t["dynamic_slice"] = dynamic_slice;
  t["dynamic_update_slice"] = dynamic_update_slice;
}

}  // namespace jx::text
