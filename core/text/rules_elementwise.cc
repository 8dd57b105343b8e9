// Elementwise rules. JAX lets a rank-0 operand (a literal) stand for an array of the result's
// shape; jx's primitives are strict, so such operands are broadcast first.
#include <cmath>
#include <iterator>
#include <fmt/format.h>

#include "core/text/rules.h"

namespace jx::text {

Array scalar(double v, DType d) { return literal_array(jx::Atom::lit(v, d)); }
Array full_like(const Array& x, double v) { return bcast(scalar(v, x.dtype()), x.shape()); }
Array cast(const Array& x, DType d) { return x.dtype() == d ? x : lax::convert_element_type(x, d); }
// Rank 0 to any shape; same rank with size-1 dims stretched (JAX's binary operations accept both).
Array bcast(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (x.ndim() == 0) return lax::broadcast_in_dim(x, shape, {});
  if (x.ndim() != shape.size())
    throw ShapeError(fmt::format("cannot broadcast {} to {}", x.aval().str(), shape_str(shape)));
  Shape kept;
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (x.shape()[d] == shape[d]) {
      kept.push_back(shape[d]);
      dims.push_back(static_cast<std::int64_t>(d));
    } else if (x.shape()[d] != 1) {
      throw ShapeError(fmt::format("cannot broadcast {} to {}", x.aval().str(), shape_str(shape)));
    }
  }
  return lax::broadcast_in_dim(lax::reshape(x, kept), shape, dims);
}

namespace {

// Operands broadcast to the first declared result's shape.
std::vector<Array> shaped(const Call& c) {
  std::vector<Array> v;
  for (const Array& x : c.in) v.push_back(bcast(x, c.out.at(0).shape));
  return v;
}

Rule unary(Array (*f)(const Array&)) {
  return [f](Call& c) -> std::vector<Array> { return {f(c.in.at(0))}; };
}
Rule binary(Array (*f)(const Array&, const Array&)) {
  return [f](Call& c) -> std::vector<Array> {
    auto v = shaped(c);
    return {f(v.at(0), v.at(1))};
  };
}
Rule bool_only(Rule r, const char* what) {
  return [r, what](Call& c) {
    for (const Array& x : c.in)
      if (x.dtype() != DType::bool_)
        c.fail(fmt::format("{} of {} (bitwise) is not supported; jx has it for bool", what, x.aval().str()));
    return r(c);
  };
}

// exp(x) - 1 without cancellation (Kahan: (u - 1) x / log u), safe under differentiation: the
// branch not taken sees an input where it is finite.
Array expm1(const Array& x) {
  const Array u = lax::exp(x);
  const Array tiny = lax::eq(u, full_like(u, 1.0)), zero = lax::eq(u, full_like(u, 0.0));
  const Array huge = lax::eq(u, full_like(u, INFINITY));
  const Array odd = lax::logical_or(lax::logical_or(tiny, zero), huge);
  const Array xs = lax::select(odd, full_like(x, 1.0), x), us = lax::exp(xs);
  const Array r = lax::div(lax::mul(lax::sub(us, full_like(us, 1.0)), xs), lax::log(us));
  return lax::select(tiny, x, lax::select(zero, full_like(x, -1.0), lax::select(huge, full_like(x, INFINITY), r)));
}

// 1 / (1 + exp(-x)) for x >= 0, e / (1 + e) with e = exp(x) below: never exp of a large value.
Array logistic(const Array& x) {
  const Array zero = full_like(x, 0.0), one = full_like(x, 1.0), pos = lax::ge(x, zero);
  const Array xp = lax::select(pos, x, zero), xn = lax::select(pos, zero, x);
  const Array sp = lax::div(one, lax::add(one, lax::exp(lax::neg(xp))));
  const Array e = lax::exp(xn);
  return lax::select(pos, sp, lax::div(e, lax::add(one, e)));
}

// XLA's integer power: repeated squaring, the same products in the same order.
Array integer_pow(const Array& x0, std::int64_t y) {
  if (y == 0) return full_like(x0, 1.0);
  Array x = x0;
  std::optional<Array> acc;
  for (std::int64_t k = y < 0 ? -y : y; k > 0; k >>= 1) {
    if (k & 1) acc = acc ? lax::mul(*acc, x) : x;
    if (k > 1) x = lax::mul(x, x);
  }
  return y < 0 ? lax::div(full_like(x0, 1.0), *acc) : *acc;
}

// erf for float32: the rational approximation XLA and Eigen use, erf(x) ≈ x·P(x²)/Q(x²) on x
// clamped to [-4, 4] (beyond, ±1 in float32); max abs error 6.5e-8 (checked against math.erf
// over [-6, 6]). float64 would need more terms: refused rather than given float32 accuracy.
Array erf32(const Array& x0) {
  static constexpr double alpha[] = {-2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06,
                                     -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                     -1.60960333262415e-02};
  static constexpr double beta[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                    -7.37332916720468e-03, -1.42647390514189e-02};
  const Array x = lax::min(lax::max(x0, full_like(x0, -4.0)), full_like(x0, 4.0)), x2 = lax::mul(x, x);
  Array p = full_like(x, alpha[0]), q = full_like(x, beta[0]);
  for (std::size_t i = 1; i < std::size(alpha); ++i) p = lax::add(lax::mul(p, x2), full_like(x, alpha[i]));
  for (std::size_t i = 1; i < std::size(beta); ++i) q = lax::add(lax::mul(q, x2), full_like(x, beta[i]));
  return lax::div(lax::mul(x, p), q);
}

std::vector<Array> select_n(Call& c) {
  auto v = shaped(c);
  if (v.size() < 2) c.fail("select_n needs a predicate and at least one case");
  if (v.size() == 2) return {v[1]};
  const Array& p = v[0];
  if (p.dtype() == DType::bool_) {
    if (v.size() != 3) c.fail("a bool predicate selects between exactly two cases");
    return {lax::select(p, v[2], v[1])};
  }
  Array r = v.back();  // out-of-range indices: JAX leaves them undefined; the last case here
  for (std::size_t k = v.size() - 2; k >= 1; --k)
    r = lax::select(lax::eq(p, full_like(p, static_cast<double>(k - 1))), v[k], r);
  return {r};
}

void add_composites(RuleTable& t) {
  t["square"] = [](Call& c) -> std::vector<Array> { return {lax::mul(c.in.at(0), c.in.at(0))}; };
  t["integer_pow"] = [](Call& c) -> std::vector<Array> { return {integer_pow(c.in.at(0), c.int_param("y"))}; };
  t["rsqrt"] = [](Call& c) -> std::vector<Array> {
    return {lax::div(full_like(c.in.at(0), 1.0), lax::sqrt(c.in.at(0)))};
  };
  t["one_minus_square"] = [](Call& c) -> std::vector<Array> {
    return {lax::sub(full_like(c.in.at(0), 1.0), lax::mul(c.in.at(0), c.in.at(0)))};
  };
  t["logistic"] = [](Call& c) -> std::vector<Array> { return {logistic(c.in.at(0))}; };
  t["expm1"] = [](Call& c) -> std::vector<Array> { return {expm1(c.in.at(0))}; };
  t["tan"] = [](Call& c) -> std::vector<Array> { return {lax::div(lax::sin(c.in.at(0)), lax::cos(c.in.at(0)))}; };
  t["exp2"] = [](Call& c) -> std::vector<Array> {
    return {lax::exp(lax::mul(c.in.at(0), full_like(c.in.at(0), std::log(2.0))))};
  };
  t["sinh"] = [](Call& c) -> std::vector<Array> {
    const Array em = expm1(c.in.at(0)), h = full_like(em, 0.5);
    return {lax::mul(h, lax::add(em, lax::div(em, lax::add(em, full_like(em, 1.0)))))};
  };
  t["cosh"] = [](Call& c) -> std::vector<Array> {
    return {lax::mul(full_like(c.in.at(0), 0.5), lax::add(lax::exp(c.in.at(0)), lax::exp(lax::neg(c.in.at(0)))))};
  };
  t["clamp"] = [](Call& c) -> std::vector<Array> {  // clamp(lo, x, hi)
    auto v = shaped(c);
    return {lax::min(lax::max(v.at(1), v.at(0)), v.at(2))};
  };
  t["select_n"] = select_n;
  t["erf"] = [](Call& c) -> std::vector<Array> {
    if (c.in.at(0).dtype() != DType::float32)
      c.fail(fmt::format("erf of {} is not supported (jx has a float32-accurate erf only)", c.in[0].aval().str()));
    return {erf32(c.in[0])};
  };
  t["copy"] = t["copy_p"] = t["optimization_barrier"] = [](Call& c) { return c.in; };
  t["reduce_precision"] = [](Call& c) {  // only the no-op form: the operand's own precision
    const int m = static_cast<int>(c.int_param("mantissa_bits"));
    if (!((c.in.at(0).dtype() == DType::float32 && m >= 23) || (c.in.at(0).dtype() == DType::float64 && m >= 52)))
      c.fail(fmt::format("rounding to {} mantissa bits is not supported", m));
    return c.in;
  };
}

}  // namespace

void add_elementwise_rules(RuleTable& t) {
  for (auto [n, f] :
       std::initializer_list<std::pair<const char*, Array (*)(const Array&)>>{{"neg", lax::neg},
                                                                              {"exp", lax::exp},
                                                                              {"log", lax::log},
                                                                              {"log1p", lax::log1p},
                                                                              {"sqrt", lax::sqrt},
                                                                              {"abs", lax::abs},
                                                                              {"sign", lax::sign},
                                                                              {"sin", lax::sin},
                                                                              {"cos", lax::cos},
                                                                              {"tanh", lax::tanh},
                                                                              {"logical_not", lax::logical_not},
                                                                              {"isnan", lax::isnan},
                                                                              {"isfinite", lax::isfinite},
                                                                              {"is_finite", lax::isfinite},
                                                                              {"stop_gradient", lax::stop_gradient}})
    t[n] = unary(f);
  for (auto [n, f] : std::initializer_list<std::pair<const char*, Array (*)(const Array&, const Array&)>>{
           {"add", lax::add},
           {"add_any", lax::add},
           {"sub", lax::sub},
           {"mul", lax::mul},
           {"div", lax::div},
           {"max", lax::max},
           {"min", lax::min},
           {"lt", lax::lt},
           {"le", lax::le},
           {"gt", lax::gt},
           {"ge", lax::ge},
           {"eq", lax::eq},
           {"ne", lax::ne},
           {"logical_and", lax::logical_and},
           {"logical_or", lax::logical_or}})
    t[n] = binary(f);
  t["pow"] = [](Call& c) -> std::vector<Array> {  // lax.pow takes an integer exponent too
    auto v = shaped(c);
    return {lax::pow(v.at(0), cast(v.at(1), v.at(0).dtype()))};
  };
  t["not"] = bool_only(unary(lax::logical_not), "not");
  t["and"] = bool_only(binary(lax::logical_and), "and");
  t["or"] = bool_only(binary(lax::logical_or), "or");
  t["select"] = [](Call& c) -> std::vector<Array> {
    auto v = shaped(c);
    return {lax::select(v.at(0), v.at(1), v.at(2))};
  };
  t["convert"] = t["convert_element_type"] = [](Call& c) -> std::vector<Array> {
    return {lax::convert_element_type(c.in.at(0), c.dtype_param("new_dtype"))};
  };
  add_composites(t);
}

}  // namespace jx::text
