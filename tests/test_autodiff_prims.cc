// Every primitive (and the np functions built on them) under the three rule tables:
//   jvp        vs central finite differences (float64, relative error < 1e-6),
//   vjp        by the dot-product test <v, J u> = <Jᵀ v, u>,
//   vmap       vs a loop over the batch (mapped on axis 0, and on the last axis with the
//              other operands unmapped).
#include "tests/prim_cases.h"

using namespace jx;

using namespace jxt;

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
  if (!c.differentiable) {
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

INSTANTIATE_TEST_SUITE_P(All, PrimRules, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });
