// Every primitive (and the np functions built on them) under the three rule tables:
//   jvp        vs central finite differences (float64, relative error < 1e-6),
//   vjp        by the dot-product test <v, J u> = <Jᵀ v, u>,
//   vmap       vs a loop over the batch (mapped on axis 0, and on the last axis with the
//              other operands unmapped).
#include <functional>

#include "tests/helpers.h"

using namespace jx;

namespace {

using Fn = std::function<Array(const std::vector<Array>&)>;

struct Case {
  std::string name;
  Fn f;
  std::vector<Shape> shapes;
  double lo = -2.0, hi = 2.0;
  bool differentiable = true;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Array> random_inputs(const Case& c, unsigned seed) {
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

double dot(const Array& a, const Array& b) { return np::sum(np::multiply(a, b)).item<double>(); }
double norm(const Array& a) { return std::sqrt(dot(a, a)); }

FlatFn flat(const Fn& f) {
  return [f](const std::vector<Array>& in) { return std::vector<Array>{f(in)}; };
}

Array spd(const Array& x) {  // x xᵀ + n I: symmetric positive definite
  const auto n = x.shape().back();
  return np::matmul(x, np::transpose(x)) + np::eye(n, {}, 0, DType::float64) * static_cast<double>(n);
}
Array wellcond(const Array& x) { return x + np::eye(x.shape().back(), {}, 0, DType::float64) * 4.0; }
Array mask23() { return np::array({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, DType::bool_); }

std::vector<Case> cases() {
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
      {"sign", [](V x) { return lax::sign(x[0]); }, {m23}, 0.5, 2.0},
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
      {"lt", [](V x) { return lax::convert_element_type(lax::lt(x[0], x[1]), DType::float64); }, {m23, m23}},
      {"isnan", [](V x) { return lax::convert_element_type(lax::isnan(x[0]), DType::float64); }, {m23}},
      {"reduce_sum", [](V x) { return lax::reduce_sum(x[0], {1}); }, {m23}},
      {"reduce_sum_all", [](V x) { return lax::reduce_sum(x[0], {0, 1}); }, {m23}},
      {"reduce_max", [](V x) { return lax::reduce_max(x[0], {0}); }, {m23}},
      {"reduce_min", [](V x) { return lax::reduce_min(x[0], {1}); }, {m23}},
      {"reduce_prod", [](V x) { return lax::reduce_prod(x[0], {1}); }, {m23}},
      {"argmax", [](V x) { return lax::convert_element_type(lax::argmax(x[0], 1), DType::float64); }, {m23}},
      {"dot_general_matmul", [](V x) { return lax::dot_general(x[0], x[1], {{1}, {0}, {}, {}}); }, {{2, 4}, {4, 3}}},
      {"dot_general_batched", [](V x) { return lax::dot_general(x[0], x[1], {{2}, {1}, {0}, {0}}); }, {{2, 3, 4}, {2, 4, 2}}},
      {"dot_general_odd_dims", [](V x) { return lax::dot_general(x[0], x[1], {{0, 2}, {2, 1}, {1}, {0}}); }, {{3, 2, 4}, {2, 4, 3}}},
      {"reshape", [](V x) { return lax::reshape(x[0], {3, 2}); }, {m23}},
      {"transpose", [](V x) { return lax::transpose(x[0], {2, 0, 1}); }, {{2, 3, 4}}},
      {"broadcast_in_dim", [](V x) { return lax::broadcast_in_dim(x[0], {4, 2, 3}, {1, 2}); }, {{2, 1}}},
      {"slice", [](V x) { return lax::slice(x[0], {1, 0}, {5, 5}, {2, 3}); }, {{5, 6}}},
      {"rev", [](V x) { return lax::rev(x[0], {1}); }, {m23}},
      {"concatenate", [](V x) { return lax::concatenate({x[0], x[1], x[0]}, 1); }, {{2, 1}, m23}},
      {"pad", [](V x) { return lax::pad(x[0], {1, 0}, {2, 1}, 3.0); }, {m23}},
      {"stop_gradient_sum", [](V x) { return lax::add(x[0], lax::mul(lax::stop_gradient(x[0]), lax::stop_gradient(x[0]))); }, {m23}},
      {"cholesky", [](V x) { return lax::cholesky(spd(x[0])); }, {m33}},
      {"cholesky_batched", [](V x) { return lax::cholesky(np::stack({spd(x[0]), spd(x[1])})); }, {m33, m33}},
      {"lu_packed", [](V x) { return std::get<0>(lax::lu(wellcond(x[0]))); }, {m33}},
      {"inv", [](V x) { return np::linalg::inv(wellcond(x[0])); }, {m33}},
      {"solve", [](V x) { return np::linalg::solve(wellcond(x[0]), x[1]); }, {m33, {3, 2}}},
      {"slogdet", [](V x) { return np::linalg::slogdet(wellcond(x[0])).second; }, {m33}},
      {"det", [](V x) { return np::linalg::det(wellcond(x[0])); }, {m33}},
      {"mean", [](V x) { return np::mean(x[0], std::vector<std::int64_t>{0}); }, {m23}},
      {"matmul_broadcast", [](V x) { return np::matmul(x[0], x[1]); }, {{2, 2, 3}, {3, 2}}},
      {"einsum3", [](V x) { return np::einsum("ij,jk,lk->il", x[0], x[1], x[2]); }, {{2, 3}, {3, 3}, {2, 3}}},
      {"einsum_batched", [](V x) { return np::einsum("nij,njk->nik", x[0], x[1]); }, {{2, 2, 3}, {2, 3, 2}}},
      {"triu_diag_trace", [](V x) { return np::triu(x[0]) + np::trace(x[0]); }, {m33}},
      {"where_square_recip", [](V x) { return np::where(mask23(), np::square(x[0]), np::reciprocal(x[1])); }, {m23, m23}, 0.5, 2.0},
      {"index_steps", [](V x) { return np::index(x[0], {np::Slice{{}, {}, -1}, np::Slice{1, {}, 2}}); }, {{3, 5}}},
      {"np_max_keepdims", [](V x) { return np::max(x[0], std::vector<std::int64_t>{1}, true) * x[0]; }, {m23}},
      {"np_min_all", [](V x) { return np::min(x[0]) + np::sum(x[0]); }, {m23}},
      {"moveaxis_swapaxes", [](V x) { return np::swapaxes(np::moveaxis(x[0], 0, -1), 0, 1); }, {{2, 3, 2}}},
      {"squeeze_expand", [](V x) { return np::expand_dims(np::squeeze(x[0]), 0); }, {{2, 1, 3}}},
      {"np_pad_flip_tril", [](V x) { return np::flip(np::tril(np::pad(x[0], {{1, 1}}, 2.0), -1)); }, {m23}},
      {"broadcast_to_maximum", [](V x) { return np::maximum(np::broadcast_to(x[0], {2, 3}), x[1]); }, {{3}, m23}},
      {"power_scalar_dot", [](V x) { return np::dot(np::power(x[0], 3.0), x[1]); }, {{3}, {3}}, 0.5, 2.0},
      {"concatenate_np", [](V x) { return np::concatenate({x[0], np::ones({1, 3}, DType::float64), x[1]}, 0); }, {m23, m23}},
      {"split_stack", [](V x) { auto p = np::split(x[0], 3, 1); return np::stack({p[2], p[0]}); }, {m23}},
  };
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {true, false})
        for (bool unit : {true, false})
          c.push_back({fmt::format("triangular_solve_{}{}{}{}", left ? "L" : "R", lower ? "l" : "u", trans ? "T" : "N", unit ? "U" : "D"),
                       [=](V x) { return lax::triangular_solve(wellcond(x[0]), x[1], {left, lower, trans, unit}); },
                       {m33, left ? Shape{3, 2} : Shape{2, 3}}});
  return c;
}

}  // namespace

class PrimRules : public ::testing::TestWithParam<Case> {};

// grad of the scalar <v, f(x)> against central differences, element by element.
TEST_P(PrimRules, GradMatchesCentralDifferences) {
  const Case& c = GetParam();
  if (c.name == "stop_gradient_sum") return;  // its derivative differs from FD by design (checked below)
  auto x = random_inputs(c, 6);
  Array y0 = c.f(x);
  Array v = np::array(jxt::randn(static_cast<std::size_t>(y0.size()), 7), y0.shape(), DType::float64);
  auto scalar = [&](const std::vector<Array>& in) { return np::sum(np::multiply(c.f(in), v)); };
  auto [val, lin] = vjp_flat([&](const std::vector<Array>& in) { return std::vector<Array>{scalar(in)}; }, x);
  auto g = lin.transpose({np::ones({}, DType::float64)});
  const double h = 1e-5;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto xv = jxt::vals(x[i]);
    std::vector<double> fd;
    for (std::size_t k = 0; k < xv.size(); ++k) {
      auto at = [&](double d) {
        auto p = xv;
        p[k] += d;
        auto in = x;
        in[i] = np::array(p, x[i].shape(), DType::float64);
        return scalar(in).item<double>();
      };
      fd.push_back((at(h) - at(-h)) / (2 * h));
    }
    Array fda = np::array(fd, x[i].shape(), DType::float64);
    const double err = norm(g[i] - fda) / std::max(norm(fda), 1e-12);
    EXPECT_LT(err, 1e-6) << c.name << " input " << i << ": grad " << ::testing::PrintToString(jxt::vals(g[i])) << " fd "
                         << ::testing::PrintToString(fd);
  }
}

TEST_P(PrimRules, JvpMatchesCentralDifferences) {
  const Case& c = GetParam();
  auto x = random_inputs(c, 1);
  Case uc = c;
  uc.lo = -1.0;
  uc.hi = 1.0;
  auto u = random_inputs(uc, 2);
  auto [y, t] = jvp_flat(flat(c.f), x, u);
  EXPECT_TRUE(jxt::all_close(y[0], jxt::vals(c.f(x)), 1e-15, 1e-15));  // primal unchanged
  const double h = 1e-5;
  std::vector<Array> xp, xm;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xp.push_back(x[i] + u[i] * h);
    xm.push_back(x[i] - u[i] * h);
  }
  Array fd = (c.f(xp) - c.f(xm)) / (2 * h);
  if (!c.differentiable || c.name == "sign" || c.name == "lt" || c.name == "isnan" || c.name == "argmax") {
    EXPECT_DOUBLE_EQ(norm(t[0]), 0.0);
    return;
  }
  if (c.name == "stop_gradient_sum") {  // d/dx (x + sg(x)^2) = 1
    EXPECT_TRUE(jxt::all_close(t[0], jxt::vals(u[0]), 1e-15, 1e-15));
    return;
  }
  const double err = norm(t[0] - fd) / std::max(norm(fd), 1e-12);
  EXPECT_LT(err, 1e-6) << c.name << ": jvp " << ::testing::PrintToString(jxt::vals(t[0])) << " fd "
                       << ::testing::PrintToString(jxt::vals(fd));
}

TEST_P(PrimRules, VjpPassesDotProductTest) {
  const Case& c = GetParam();
  auto x = random_inputs(c, 3);
  Case uc = c;
  uc.lo = -1.0;
  uc.hi = 1.0;
  auto u = random_inputs(uc, 4);
  auto [y, lin] = vjp_flat(flat(c.f), x);
  Array v = np::array(jxt::randn(static_cast<std::size_t>(y[0].size()), 5), y[0].shape(), DType::float64);
  Array ju = lin(u)[0];
  auto jtv = lin.transpose({v});
  ASSERT_EQ(jtv.size(), x.size());
  double rhs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(jtv[i].shape(), x[i].shape());
    rhs += dot(jtv[i], u[i]);
  }
  const double lhs = dot(v, ju);
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::max(1.0, std::abs(lhs))) << c.name;
}

TEST_P(PrimRules, VmapEqualsLoop) {
  const Case& c = GetParam();
  const int B = 3;
  std::vector<std::vector<Array>> per;
  for (int b = 0; b < B; ++b) per.push_back(random_inputs(c, 10 + b));
  std::vector<Array> stacked;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) {
    std::vector<Array> col;
    for (int b = 0; b < B; ++b) col.push_back(per[b][i]);
    stacked.push_back(np::stack(col));
  }
  std::vector<Array> want;
  for (int b = 0; b < B; ++b) want.push_back(c.f(per[b]));
  Array got = vmap_flat(flat(c.f), std::vector<std::optional<std::int64_t>>(c.shapes.size(), 0))(stacked)[0];
  EXPECT_TRUE(jxt::all_close(got, jxt::vals(np::stack(want)), 1e-12, 1e-12)) << c.name;
  // first operand mapped on its last axis, out axis last, the others unmapped (shared)
  std::vector<Array> mixed{np::moveaxis(stacked[0], 0, -1)};
  std::vector<std::optional<std::int64_t>> axes{-1};
  std::vector<Array> want2;
  for (std::size_t i = 1; i < c.shapes.size(); ++i) {
    mixed.push_back(per[0][i]);
    axes.push_back(std::nullopt);
  }
  for (int b = 0; b < B; ++b) {
    std::vector<Array> in{per[b][0]};
    for (std::size_t i = 1; i < c.shapes.size(); ++i) in.push_back(per[0][i]);
    want2.push_back(c.f(in));
  }
  Array got2 = vmap_flat(flat(c.f), axes, {-1})(mixed)[0];
  EXPECT_TRUE(jxt::all_close(got2, jxt::vals(np::stack(want2, -1)), 1e-12, 1e-12)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(All, PrimRules, ::testing::ValuesIn(cases()), [](const auto& info) { return info.param.name; });
