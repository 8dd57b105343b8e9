// Rounding, remainders, integer division, xor, tile and platform_index as compositions.
// trunc(x) goes through int32: exact for |x| < 2^31; an f64 beyond that is split as
// q·2^31 + r (q = trunc(x / 2^31), exact), and any |x| past the mantissa (2^23 for f32, 2^52
// for f64), inf and nan are their own truncation. floor/ceil/round have zero derivative, as in JAX.
#include <cmath>
#include <fmt/format.h>

#include "core/text/rules.h"

namespace jx::text {
namespace {

Array trunc32(const Array& x) { return cast(cast(x, DType::int32), x.dtype()); }

Array trunc(const Array& x) {
  const double mantissa = x.dtype() == DType::float32 ? 8388608.0 : 4503599627370496.0;  // 2^23, 2^52
  const Array small = lax::lt(lax::abs(x), full_like(x, mantissa));
  const Array xs = lax::select(small, x, full_like(x, 0.0));  // nothing out of int32 range converts
  Array t = trunc32(xs);
  if (x.dtype() == DType::float64) {
    const Array two31 = full_like(x, 2147483648.0);
    const Array q = lax::mul(trunc32(lax::div(xs, two31)), two31);
    t = lax::add(q, trunc32(lax::sub(xs, q)));
  }
  return lax::select(small, t, x);
}

Array floor_of(const Array& x) {
  const Array t = trunc(x);
  return lax::select(lax::lt(x, t), lax::sub(t, full_like(t, 1.0)), t);
}
Array ceil_of(const Array& x) {
  const Array t = trunc(x);
  return lax::select(lax::gt(x, t), lax::add(t, full_like(t, 1.0)), t);
}

// rounding_method 0: half away from zero (lax.round's default); 1: half to even (jnp.round).
Array round_of(const Array& x, bool to_even) {
  const Array t = trunc(x), a = lax::abs(lax::sub(x, t)), half = full_like(x, 0.5);
  Array up = lax::ge(a, half);
  if (to_even) {
    const Array odd = lax::ne(lax::sub(t, lax::mul(full_like(t, 2.0), trunc(lax::mul(t, half)))), full_like(t, 0.0));
    up = lax::logical_or(lax::gt(a, half), lax::logical_and(lax::eq(a, half), odd));
  }
  return lax::select(up, lax::add(t, lax::sign(x)), t);
}

// JAX's rounding primitives take floating operands only (lax.floor of an int32 is a TypeError)
const Array& floating_operand(const Call& c) {
  const Array& x = c.in.at(0);
  if (!is_floating(x.dtype())) c.fail(fmt::format("takes a floating operand, not {}", x.aval().str()));
  return x;
}

Rule rounding(Array (*f)(const Array&)) {
  return [f](Call& c) -> std::vector<Array> { return {lax::stop_gradient(f(floating_operand(c)))}; };
}

// Integer quotient truncated toward zero, through float64 (exact for int32 operands).
Array int_div(const Array& a, const Array& b) {
  return cast(trunc(lax::div(cast(a, DType::float64), cast(b, DType::float64))), DType::int32);
}

std::vector<Array> div(Call& c) {
  const Array a = bcast(c.in.at(0), c.out.at(0).shape), b = bcast(c.in.at(1), c.out.at(0).shape);
  if (a.dtype() == DType::int32) return {int_div(a, b)};
  return {lax::div(a, b)};
}

// rem(x, y) = x - y·trunc(x / y), sign of x (C's fmod); the quotient carries no derivative.
std::vector<Array> rem(Call& c) {
  const Array x = bcast(c.in.at(0), c.out.at(0).shape), y = bcast(c.in.at(1), c.out.at(0).shape);
  if (x.dtype() == DType::int32) return {lax::sub(x, lax::mul(y, int_div(x, y)))};
  return {lax::sub(x, lax::mul(y, lax::stop_gradient(trunc(lax::div(x, y)))))};
}

std::vector<Array> tile(Call& c) {
  Array x = c.in.at(0);
  const auto reps = c.ints("reps");
  if (reps.size() != x.ndim()) c.fail("reps needs one entry per dimension");
  for (std::size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] == 1) continue;
    Shape big = x.shape();
    big.insert(big.begin() + static_cast<std::ptrdiff_t>(d), reps[d]);
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < x.ndim(); ++i) dims.push_back(static_cast<std::int64_t>(i < d ? i : i + 1));
    Shape merged = x.shape();
    merged[d] *= reps[d];
    x = lax::reshape(lax::broadcast_in_dim(x, big, dims), merged);
  }
  return {x};
}

// platform_index[platforms=(('mosaic',), None)]: jx is none of JAX's platforms, so the default
// entry (None), else the one naming cpu.
std::vector<Array> platform_index(Call& c) {
  const Value& p = c.param("platforms");
  std::int64_t pick = -1;
  for (std::size_t i = 0; i < p.items.size() && pick < 0; ++i)
    if (p.items[i].is_none()) pick = static_cast<std::int64_t>(i);
  for (std::size_t i = 0; i < p.items.size() && pick < 0; ++i)
    for (const Value& n : p.items[i].items)
      if (n.text == "cpu") pick = static_cast<std::int64_t>(i);
  return {scalar(static_cast<double>(std::max<std::int64_t>(pick, 0)), DType::int32)};
}

}  // namespace

void add_numeric_rules(RuleTable& t) {
  t["floor"] = rounding(floor_of);
  t["ceil"] = rounding(ceil_of);
  t["trunc"] = rounding(trunc);
  t["round"] = [](Call& c) -> std::vector<Array> {
    const bool even = c.opt("rounding_method") && c.param("rounding_method").text.find('1') != std::string::npos;
    const bool even_name =
        c.opt("rounding_method") && c.param("rounding_method").text.find("EVEN") != std::string::npos;
    return {lax::stop_gradient(round_of(floating_operand(c), even || even_name))};
  };
  t["div"] = div;
  t["rem"] = rem;
  t["xor"] = [](Call& c) -> std::vector<Array> {
    for (const Array& x : c.in)
      if (x.dtype() != DType::bool_)
        c.fail(fmt::format("xor of {} (bitwise) is not supported; jx has it for bool", x.aval().str()));
    return {lax::ne(c.in.at(0), c.in.at(1))};
  };
  t["tile"] = tile;
  t["platform_index"] = platform_index;
}

}  // namespace jx::text
