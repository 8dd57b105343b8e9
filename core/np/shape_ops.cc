#include <algorithm>
#include <numeric>

#include "core/np/np_internal.h"

namespace jx::np {
namespace detail {

Array broadcast_as(const std::string& op, const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const std::size_t n = shape.size(), k = x.ndim();
  if (k > n) throw ShapeError(fmt::format("{}: cannot broadcast {} to shape {}", op, x.aval().str(), shape_str(shape)));
  std::vector<std::int64_t> dims(k);
  for (std::size_t i = 0; i < k; ++i) {
    dims[i] = static_cast<std::int64_t>(n - k + i);
    if (x.shape()[i] != 1 && x.shape()[i] != shape[dims[i]])
      throw ShapeError(fmt::format("{}: cannot broadcast {} to shape {}", op, x.aval().str(), shape_str(shape)));
  }
  return lax::broadcast_in_dim(x, shape, dims);
}

}  // namespace detail

Array broadcast_to(const Array& x, const Shape& shape) { return detail::broadcast_as("broadcast_to", x, shape); }

Array reshape(const Array& x, Shape shape) {
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw ShapeError("reshape: can only specify one unknown dimension");
      infer = static_cast<std::int64_t>(i);
    } else if (shape[i] < 0) {
      throw ShapeError(fmt::format("reshape: invalid dimension {} in {}", shape[i], shape_str(shape)));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      throw ShapeError(fmt::format("reshape: cannot reshape {} into shape {}", x.aval().str(), shape_str(shape)));
    shape[infer] = x.size() / known;
  }
  if (numel(shape) != x.size())
    throw ShapeError(fmt::format("reshape: cannot reshape {} into shape {}", x.aval().str(), shape_str(shape)));
  return shape == x.shape() ? x : lax::reshape(x, shape);
}

Array ravel(const Array& x) { return reshape(x, {x.size()}); }

Array transpose(const Array& x, std::optional<std::vector<std::int64_t>> perm) {
  std::vector<std::int64_t> p;
  if (!perm) {
    for (std::size_t i = x.ndim(); i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
  } else {
    if (perm->size() != x.ndim())
      throw ShapeError(fmt::format("transpose: axes {} don't match {}", shape_str(*perm), x.aval().str()));
    for (auto a : *perm) p.push_back(normalize_axis(a, x.ndim(), "transpose", "axis"));
    auto sorted = p;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw ShapeError(fmt::format("transpose: repeated axis in {}", shape_str(*perm)));
  }
  return lax::transpose(x, p);
}

Array swapaxes(const Array& x, std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> p(x.ndim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[normalize_axis(a, x.ndim(), "swapaxes", "axis1")], p[normalize_axis(b, x.ndim(), "swapaxes", "axis2")]);
  return lax::transpose(x, p);
}

Array moveaxis(const Array& x, std::int64_t source, std::int64_t destination) {
  const auto s = normalize_axis(source, x.ndim(), "moveaxis", "source");
  const auto d = normalize_axis(destination, x.ndim(), "moveaxis", "destination");
  std::vector<std::int64_t> p;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (static_cast<int>(i) != s) p.push_back(static_cast<std::int64_t>(i));
  p.insert(p.begin() + d, s);
  return lax::transpose(x, p);
}

Array squeeze(const Array& x, Axes axes) {
  std::vector<std::int64_t> ax;
  if (!axes) {
    for (std::size_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[i] == 1) ax.push_back(static_cast<std::int64_t>(i));
  } else {
    ax = detail::norm_axes("squeeze", axes, x.ndim());
    for (auto a : ax)
      if (x.shape()[a] != 1)
        throw ShapeError(fmt::format("squeeze: cannot select axis {} of {}: its size is not 1", a, x.aval().str()));
  }
  Shape s;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (std::find(ax.begin(), ax.end(), static_cast<std::int64_t>(i)) == ax.end()) s.push_back(x.shape()[i]);
  return reshape(x, s);
}

Array expand_dims(const Array& x, std::int64_t axis) {
  const auto a = normalize_axis(axis, x.ndim() + 1, "expand_dims", "axis");
  Shape s = x.shape();
  s.insert(s.begin() + a, 1);
  return lax::reshape(x, s);
}

Array concatenate(const std::vector<Array>& xs, std::int64_t axis) {
  if (xs.empty()) throw ShapeError("concatenate: need at least one array to concatenate");
  if (xs[0].ndim() == 0) throw ShapeError("concatenate: zero-dimensional arrays cannot be concatenated");
  const auto a = normalize_axis(axis, xs[0].ndim(), "concatenate", "axis");
  DType d = xs[0].dtype();
  for (auto& x : xs) d = promote(d, x.dtype());
  std::vector<Array> cs;
  for (auto& x : xs) cs.push_back(detail::cast(x, d));
  return cs.size() == 1 ? cs[0] : lax::concatenate(cs, a);
}

Array stack(const std::vector<Array>& xs, std::int64_t axis) {
  if (xs.empty()) throw ShapeError("stack: need at least one array to stack");
  const auto a = normalize_axis(axis, xs[0].ndim() + 1, "stack", "axis");
  std::vector<Array> es;
  for (auto& x : xs) {
    if (x.shape() != xs[0].shape())
      throw ShapeError(fmt::format("stack: all input arrays must have the same shape, got {} and {}",
                                   xs[0].aval().str(), x.aval().str()));
    es.push_back(expand_dims(x, a));
  }
  return concatenate(es, a);
}

std::vector<Array> split(const Array& x, const std::vector<std::int64_t>& indices, std::int64_t axis) {
  const auto a = normalize_axis(axis, x.ndim(), "split", "axis");
  const std::int64_t n = x.shape()[a];
  std::vector<Array> out;
  std::int64_t prev = 0;
  auto bounds = indices;
  bounds.push_back(n);
  for (auto b : bounds) {
    const std::int64_t e = std::clamp(b < 0 ? b + n : b, std::int64_t{0}, n);
    const std::int64_t s = std::min(prev, e);
    out.push_back(lax::slice_in_dim(x, s, e, 1, a));
    prev = e;
  }
  return out;
}

std::vector<Array> split(const Array& x, std::int64_t sections, std::int64_t axis) {
  const auto a = normalize_axis(axis, x.ndim(), "split", "axis");
  const std::int64_t n = x.shape()[a];
  if (sections <= 0 || n % sections != 0)
    throw ShapeError(
        fmt::format("split: array split does not result in an equal division ({} elements on axis {} into {} sections)",
                    n, a, sections));
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 1; i < sections; ++i) idx.push_back(i * (n / sections));
  return split(x, idx, a);
}

Array pad(const Array& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& w, double value) {
  if (w.size() != 1 && w.size() != x.ndim())
    throw ShapeError(fmt::format("pad: {} pad widths given for {}", w.size(), x.aval().str()));
  std::vector<std::int64_t> lo, hi;
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    auto [l, h] = w.size() == 1 ? w[0] : w[i];
    if (l < 0 || h < 0) throw ShapeError(fmt::format("pad: negative pad width ({}, {}) on axis {}", l, h, i));
    lo.push_back(l);
    hi.push_back(h);
  }
  return lax::pad(x, lo, hi, value);
}

Array flip(const Array& x, Axes axes) { return lax::rev(x, detail::norm_axes("flip", axes, x.ndim())); }

Array diagonal(const Array& x, std::int64_t offset, std::int64_t axis1, std::int64_t axis2) {
  if (x.ndim() < 2) throw ShapeError(fmt::format("diagonal: requires an array of rank >= 2, got {}", x.aval().str()));
  const auto a1 = normalize_axis(axis1, x.ndim(), "diagonal", "axis1");
  const auto a2 = normalize_axis(axis2, x.ndim(), "diagonal", "axis2");
  if (a1 == a2) throw ShapeError("diagonal: axis1 and axis2 cannot be the same");
  std::vector<std::int64_t> perm;
  Shape batch;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (static_cast<int>(i) != a1 && static_cast<int>(i) != a2) {
      perm.push_back(static_cast<std::int64_t>(i));
      batch.push_back(x.shape()[i]);
    }
  perm.push_back(a1);
  perm.push_back(a2);
  const std::int64_t n = x.shape()[a1], m = x.shape()[a2];
  // Element (i, i + offset) of the trailing n×m block sits at flat i*(m+1) + offset (offset >= 0)
  // or (i - offset, i) at flat i*(m+1) - offset*m (offset < 0).
  const std::int64_t len = std::max<std::int64_t>(0, offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m));
  const std::int64_t start = len == 0 ? 0 : (offset >= 0 ? offset : -offset * m);
  const std::int64_t limit = len == 0 ? 0 : start + (len - 1) * (m + 1) + 1;
  Shape flat = batch;
  flat.push_back(n * m);
  Array f = lax::reshape(lax::transpose(x, perm), flat);
  std::vector<std::int64_t> lo(flat.size(), 0), hi = flat, st(flat.size(), 1);
  lo.back() = start;
  hi.back() = limit;
  st.back() = m + 1;
  return lax::slice(f, lo, hi, st);
}

Array trace(const Array& x, std::int64_t offset, std::int64_t axis1, std::int64_t axis2) {
  return sum(diagonal(x, offset, axis1, axis2), std::vector<std::int64_t>{-1});
}

namespace {
// keep(i, j) over the trailing two axes; mask built from iotas so no host loop.
Array tri_mask(const char* name, const Array& x, std::int64_t k, bool upper) {
  if (x.ndim() < 2) throw ShapeError(fmt::format("{}: requires an array of rank >= 2, got {}", name, x.aval().str()));
  const std::int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  Array i = lax::iota(DType::int32, {n, m}, 0), j = lax::iota(DType::int32, {n, m}, 1);
  Array d = subtract(j, i);
  Array kk = scalar(static_cast<double>(k), DType::int32);
  Array mask = upper ? greater_equal(d, kk) : less_equal(d, kk);
  return where(mask, x, zeros({}, x.dtype()));
}
}  // namespace

Array triu(const Array& x, std::int64_t k) { return tri_mask("triu", x, k, true); }
Array tril(const Array& x, std::int64_t k) { return tri_mask("tril", x, k, false); }

Array index(const Array& x, const std::vector<Index>& idx) {
  if (idx.size() > x.ndim())
    throw ShapeError(fmt::format("index: too many indices ({}) for {}", idx.size(), x.aval().str()));
  const std::size_t nd = x.ndim();
  std::vector<std::int64_t> lo(nd, 0), hi = x.shape(), st(nd, 1), flip_axes;
  Shape out;
  for (std::size_t i = 0; i < nd; ++i) {
    const std::int64_t n = x.shape()[i];
    if (i >= idx.size()) {
      out.push_back(n);
      continue;
    }
    if (auto* k = std::get_if<std::int64_t>(&idx[i])) {
      if (*k < -n || *k >= n)
        throw ShapeError(
            fmt::format("index: index {} is out of bounds for axis {} with size {} of {}", *k, i, n, x.aval().str()));
      lo[i] = *k < 0 ? *k + n : *k;
      hi[i] = lo[i] + 1;
      continue;
    }
    const Slice& s = std::get<Slice>(idx[i]);
    if (s.step == 0) throw ShapeError(fmt::format("index: slice step cannot be zero (axis {})", i));
    auto bound = [&](std::optional<std::int64_t> v, const char* what) -> std::optional<std::int64_t> {
      if (!v) return v;
      if (*v < -n || *v > n)
        throw ShapeError(
            fmt::format("index: slice {} {} is out of range for axis {} of {}", what, *v, i, x.aval().str()));
      return *v < 0 ? *v + n : *v;
    };
    auto b = bound(s.start, "start"), e = bound(s.stop, "stop");
    std::int64_t step = s.step;
    if (step < 0) {  // reverse the axis: position p maps to n-1-p, the step becomes positive
      flip_axes.push_back(static_cast<std::int64_t>(i));
      step = -step;
      const std::int64_t bb = b ? n - 1 - std::min(*b, n - 1) : 0;
      const std::int64_t ee = e ? n - 1 - *e : n;
      b = bb;
      e = std::max(ee, bb);
    }
    const std::int64_t bb = b.value_or(0), ee = std::max(e.value_or(n), bb);
    lo[i] = bb;
    hi[i] = ee;
    st[i] = step;
    out.push_back((ee - bb + step - 1) / step);
  }
  Array y = flip_axes.empty() ? x : lax::rev(x, flip_axes);
  y = lax::slice(y, lo, hi, st);
  return reshape(y, out);
}

}  // namespace jx::np
