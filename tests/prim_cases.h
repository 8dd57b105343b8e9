#pragma once
// The table of primitive and np-function cases shared by the rule checks and the jit checks.
#include <functional>

#include "tests/helpers.h"

namespace jxt {
using namespace jx;

using Fn = std::function<Array(const std::vector<Array>&)>;

struct Case {
  std::string name;
  Fn f;
  std::vector<Shape> shapes;
  double lo = -2.0, hi = 2.0;
  bool differentiable = true;  // false: piecewise constant, its tangent must be exactly zero
};
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

inline std::vector<Array> random_inputs(const Case& c, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(c.lo, c.hi);
  std::vector<Array> xs;
  for (const Shape& s : c.shapes) {
    std::vector<double> v(static_cast<std::size_t>(numel(s)));
    for (auto& e : v) e = d(g);
    xs.push_back(np::array(v, s, DType::float64));
  }
  return xs;
}

inline double dot(const Array& a, const Array& b) { return np::sum(np::multiply(a, b)).item<double>(); }
inline double norm(const Array& a) { return std::sqrt(dot(a, a)); }

inline FlatFn flat(const Fn& f) {
  return [f](const std::vector<Array>& in) { return std::vector<Array>{f(in)}; };
}

inline Array spd(const Array& x) {  // x xᵀ + n I: symmetric positive definite
  const auto n = x.shape().back();
  return np::matmul(x, np::transpose(x)) + np::eye(n, {}, 0, x.dtype()) * static_cast<double>(n);
}
inline Array wellcond(const Array& x) { return x + np::eye(x.shape().back(), {}, 0, x.dtype()) * 4.0; }
inline Array mask23() { return np::array({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, DType::bool_); }

inline std::vector<Case> cases() {
  using V = const std::vector<Array>&;
  const Shape m23{2, 3}, m33{3, 3};
  std::vector<Case> c = {
      {"neg", [](V x) { return lax::neg(x[0]); }, {m23}},
      {"exp", [](V x) { return lax::exp(x[0]); }, {m23}},
      {"log", [](V x) { return lax::log(x[0]); }, {m23}, 0.5, 3.0},
      {"log1p", [](V x) { return lax::log1p(x[0]); }, {m23}, 0.5, 3.0},
      {"sqrt", [](V x) { return lax::sqrt(x[0]); }, {m23}, 0.5, 3.0},
      {"abs", [](V x) { return lax::abs(x[0]); }, {m23}, 0.5, 2.0},
      {"abs_negative", [](V x) { return lax::abs(x[0]); }, {m23}, -2.0, -0.5},
      {"sign", [](V x) { return lax::sign(x[0]); }, {m23}, 0.5, 2.0, false},
      {"sin", [](V x) { return lax::sin(x[0]); }, {m23}},
      {"cos", [](V x) { return lax::cos(x[0]); }, {m23}},
      {"tanh", [](V x) { return lax::tanh(x[0]); }, {m23}},
      {"convert_f64", [](V x) { return lax::convert_element_type(x[0], DType::float64); }, {m23}},
      {"add", [](V x) { return lax::add(x[0], x[1]); }, {m23, m23}},
      {"sub", [](V x) { return lax::sub(x[0], x[1]); }, {m23, m23}},
      {"mul", [](V x) { return lax::mul(x[0], x[1]); }, {m23, m23}},
      {"div", [](V x) { return lax::div(x[0], x[1]); }, {m23, m23}, 0.5, 2.0},
      {"pow", [](V x) { return lax::pow(x[0], x[1]); }, {m23, m23}, 0.5, 2.0},
      {"max", [](V x) { return lax::max(x[0], x[1]); }, {m23, m23}},
      {"min", [](V x) { return lax::min(x[0], x[1]); }, {m23, m23}},
      {"select", [](V x) { return lax::select(mask23(), x[0], x[1]); }, {m23, m23}},
      {"lt",
       [](V x) { return lax::convert_element_type(lax::lt(x[0], x[1]), DType::float64); },
       {m23, m23},
       -2.0,
       2.0,
       false},
      {"isnan",
       [](V x) { return lax::convert_element_type(lax::isnan(x[0]), DType::float64); },
       {m23},
       -2.0,
       2.0,
       false},
      {"reduce_sum", [](V x) { return lax::reduce_sum(x[0], {1}); }, {m23}},
      {"reduce_sum_all",
       [](V x) {
         return lax::reduce_sum(x[0], {0, 1});
       },
       {m23}},
      {"reduce_max", [](V x) { return lax::reduce_max(x[0], {0}); }, {m23}},
      {"reduce_min", [](V x) { return lax::reduce_min(x[0], {1}); }, {m23}},
      {"reduce_prod", [](V x) { return lax::reduce_prod(x[0], {1}); }, {m23}},
      {"argmax",
       [](V x) { return lax::convert_element_type(lax::argmax(x[0], 1), DType::float64); },
       {m23},
       -2.0,
       2.0,
       false},
      {"dot_general_matmul",
       [](V x) {
         return lax::dot_general(x[0], x[1], {{1}, {0}, {}, {}});
       },
       {{2, 4}, {4, 3}}},
      {"dot_general_batched",
       [](V x) {
         return lax::dot_general(x[0], x[1], {{2}, {1}, {0}, {0}});
       },
       {{2, 3, 4}, {2, 4, 2}}},
      {"dot_general_odd_dims",
       [](V x) {
         return lax::dot_general(x[0], x[1], {{0, 2}, {2, 1}, {1}, {0}});
       },
       {{3, 2, 4}, {2, 4, 3}}},
      {"reshape",
       [](V x) {
         return lax::reshape(x[0], {3, 2});
       },
       {m23}},
      {"transpose",
       [](V x) {
         return lax::transpose(x[0], {2, 0, 1});
       },
       {{2, 3, 4}}},
      {"broadcast_in_dim",
       [](V x) {
         return lax::broadcast_in_dim(x[0], {4, 2, 3}, {1, 2});
       },
       {{2, 1}}},
      {"slice",
       [](V x) {
         return lax::slice(x[0], {1, 0}, {5, 5}, {2, 3});
       },
       {{5, 6}}},
      {"rev", [](V x) { return lax::rev(x[0], {1}); }, {m23}},
      {"concatenate",
       [](V x) {
         return lax::concatenate({x[0], x[1], x[0]}, 1);
       },
       {{2, 1}, m23}},
      {"pad",
       [](V x) {
         return lax::pad(x[0], {1, 0}, {2, 1}, 3.0);
       },
       {m23}},
      {"stop_gradient_sum",
       [](V x) { return lax::add(x[0], lax::mul(lax::stop_gradient(x[0]), lax::stop_gradient(x[0]))); },
       {m23}},
      {"cholesky", [](V x) { return lax::cholesky(spd(x[0])); }, {m33}},
      {"cholesky_batched",
       [](V x) {
         return lax::cholesky(np::stack({spd(x[0]), spd(x[1])}));
       },
       {m33, m33}},
      {"lu_packed", [](V x) { return std::get<0>(lax::lu(wellcond(x[0]))); }, {m33}},
      {"inv", [](V x) { return np::linalg::inv(wellcond(x[0])); }, {m33}},
      {"inv_batched",
       [](V x) {
         return np::linalg::inv(np::stack({wellcond(x[0]), wellcond(x[1])}));
       },
       {m33, m33}},
      {"solve", [](V x) { return np::linalg::solve(wellcond(x[0]), x[1]); }, {m33, {3, 2}}},
      {"slogdet", [](V x) { return np::linalg::slogdet(wellcond(x[0])).second; }, {m33}},
      {"det", [](V x) { return np::linalg::det(wellcond(x[0])); }, {m33}},
      {"mean", [](V x) { return np::mean(x[0], std::vector<std::int64_t>{0}); }, {m23}},
      {"matmul_broadcast", [](V x) { return np::matmul(x[0], x[1]); }, {{2, 2, 3}, {3, 2}}},
      {"einsum3", [](V x) { return np::einsum("ij,jk,lk->il", x[0], x[1], x[2]); }, {{2, 3}, {3, 3}, {2, 3}}},
      {"einsum_batched", [](V x) { return np::einsum("nij,njk->nik", x[0], x[1]); }, {{2, 2, 3}, {2, 3, 2}}},
      {"triu_diag_trace", [](V x) { return np::triu(x[0]) + np::trace(x[0]); }, {m33}},
      {"where_square_recip",
       [](V x) { return np::where(mask23(), np::square(x[0]), np::reciprocal(x[1])); },
       {m23, m23},
       0.5,
       2.0},
      {"index_steps",
       [](V x) {
         return np::index(x[0], {np::Slice{{}, {}, -1}, np::Slice{1, {}, 2}});
       },
       {{3, 5}}},
      {"compare_logic",
       [](V x) {
         Array a = x[0], b = x[1];
         Array l = lax::logical_or(lax::logical_and(lax::le(a, b), lax::ne(a, b)),
                                   lax::logical_and(lax::logical_not(lax::gt(a, b)), lax::eq(a, a)));
         return lax::add(lax::convert_element_type(l, a.dtype()),
                         lax::mul(lax::convert_element_type(lax::ge(a, b), a.dtype()), a));
       },
       {m23, m23}},
      {"argmin",
       [](V x) { return lax::convert_element_type(lax::argmin(x[0], 0), x[0].dtype()); },
       {m23},
       -2.0,
       2.0,
       false},
      {"isfinite",
       [](V x) { return lax::convert_element_type(lax::isfinite(lax::log(x[0])), x[0].dtype()); },
       {m23},
       -2.0,
       2.0,
       false},
      {"convert_int32",
       [](V x) { return lax::convert_element_type(lax::convert_element_type(x[0] * 3.0, DType::int32), x[0].dtype()); },
       {m23},
       -2.0,
       2.0,
       false},
      {"iota_prod_minimum",
       [](V x) {
         Array i = lax::convert_element_type(lax::iota(DType::int32, {3}, 0), x[0].dtype());
         return np::minimum(np::prod(x[0], std::vector<std::int64_t>{1}) + i,
                            np::ravel(np::index(x[0], {np::Slice{}, std::int64_t{0}})));
       },
       {m33}},
      {"np_max_keepdims", [](V x) { return np::max(x[0], std::vector<std::int64_t>{1}, true) * x[0]; }, {m23}},
      {"np_min_all", [](V x) { return np::min(x[0]) + np::sum(x[0]); }, {m23}},
      {"moveaxis_swapaxes", [](V x) { return np::swapaxes(np::moveaxis(x[0], 0, -1), 0, 1); }, {{2, 3, 2}}},
      {"squeeze_expand", [](V x) { return np::expand_dims(np::squeeze(x[0]), 0); }, {{2, 1, 3}}},
      {"np_pad_flip_tril",
       [](V x) {
         return np::flip(np::tril(np::pad(x[0], {{1, 1}}, 2.0), -1));
       },
       {m23}},
      {"broadcast_to_maximum",
       [](V x) {
         return np::maximum(np::broadcast_to(x[0], {2, 3}), x[1]);
       },
       {{3}, m23}},
      {"power_scalar_dot", [](V x) { return np::dot(np::power(x[0], 3.0), x[1]); }, {{3}, {3}}, 0.5, 2.0},
      {"concatenate_np",
       [](V x) {
         return np::concatenate({x[0], np::ones({1, 3}, DType::float64), x[1]}, 0);
       },
       {m23, m23}},
      {"split_stack",
       [](V x) {
         auto p = np::split(x[0], 3, 1);
         return np::stack({p[2], p[0]});
       },
       {m23}},
  };
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {true, false})
        for (bool unit : {true, false})
          c.push_back({fmt::format("triangular_solve_{}{}{}{}", left ? "L" : "R", lower ? "l" : "u", trans ? "T" : "N",
                                   unit ? "U" : "D"),
                       [=](V x) {
                         return lax::triangular_solve(wellcond(x[0]), x[1], {left, lower, trans, unit});
                       },
                       {m33, left ? Shape{3, 2} : Shape{2, 3}}});
  return c;
}

}  // namespace jxt
