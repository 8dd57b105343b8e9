#include <map>

#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
// A random symmetric positive-definite n×n matrix: M Mᵀ + n I.
Array spd(int n, unsigned seed, DType d = DType::float64) {
  Array m = np::array(jxt::randn(static_cast<std::size_t>(n * n), seed), Shape{n, n}, DType::float64);
  return np::astype(np::matmul(m, np::transpose(m)) + np::eye(n, {}, 0, DType::float64) * static_cast<double>(n), d);
}
Array randm(Shape s, unsigned seed) {
  return np::array(jxt::randn(static_cast<std::size_t>(numel(s)), seed), s, DType::float64);
}
}  // namespace

TEST(Linalg, CholeskyKnownAndReconstructs) {
  Array a = np::array({{4.0, 2.0}, {2.0, 5.0}}, DType::float64);
  EXPECT_TRUE(all_close(np::linalg::cholesky(a), {2, 0, 1, 2}));
  Array s = spd(6, 1);
  Array l = np::linalg::cholesky(s);
  EXPECT_TRUE(all_close(np::matmul(l, np::transpose(l)), vals(s), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(np::triu(l, 1), std::vector<double>(36, 0.0)));
  Array batch = np::stack({spd(3, 2), spd(3, 3)});
  Array lb = np::linalg::cholesky(batch);
  EXPECT_TRUE(all_close(np::matmul(lb, np::swapaxes(lb, -1, -2)), vals(batch), 1e-12, 1e-12));
  Array l32 = np::linalg::cholesky(spd(4, 4, DType::float32));
  EXPECT_EQ(l32.dtype(), DType::float32);
  EXPECT_TRUE(all_close(np::matmul(l32, np::transpose(l32)), vals(spd(4, 4)), 1e-5, 1e-5));
}

TEST(Linalg, CholeskyRejectsBadInput) {
  EXPECT_TRUE(jxt::throws_with<LinAlgError>(
      [] {
        np::linalg::cholesky(np::array({{1.0, 2.0}, {2.0, 1.0}}));
      },
      {"cholesky: matrix is not positive definite", "order 2"}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [] {
        np::linalg::cholesky(np::zeros({2, 3}));
      },
      "cholesky: expected a (batch of) square matrices [..., n, n], got float32[2,3]"));
}

TEST(Linalg, TriangularSolveAllVariants) {
  const int n = 4, k = 3;
  Array a = randm({n, n}, 10) + np::eye(n, {}, 0, DType::float64) * 4.0;
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {true, false})
        for (bool unit : {true, false}) {
          Array b = left ? randm({n, k}, 11) : randm({k, n}, 12);
          Array x = np::linalg::triangular_solve(a, b, {left, lower, trans, unit});
          // op(A) built explicitly from the triangle that the solve reads
          Array t = lower ? np::tril(a) : np::triu(a);
          if (unit) t = np::where(np::eye(n, {}, 0, DType::bool_), 1.0, t);  // diagonal read as ones
          if (trans) t = np::transpose(t);
          Array back = left ? np::matmul(t, x) : np::matmul(x, t);
          EXPECT_TRUE(all_close(back, vals(b), 1e-12, 1e-12))
              << "left=" << left << " lower=" << lower << " trans=" << trans << " unit=" << unit;
        }
}

TEST(Linalg, TriangularSolveSingularAndShapes) {
  Array a = np::array({{1.0, 0.0}, {2.0, 0.0}});
  EXPECT_TRUE(jxt::throws_with<LinAlgError>(
      [&] {
        np::linalg::triangular_solve(a, np::ones({2, 1}));
      },
      {"triangular_solve: matrix is singular (zero on the diagonal at 1)"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] {
        np::linalg::triangular_solve(np::eye(3), np::ones({2, 1}));
      },
      {"triangular_solve", "float32[2,1]", "float32[3,3]"}));
  // batch broadcasting of a against b
  Array x = np::linalg::triangular_solve(np::eye(2) * 2.0, np::ones({3, 2, 1}));
  EXPECT_EQ(x.shape(), (Shape{3, 2, 1}));
  EXPECT_TRUE(all_close(x, std::vector<double>(6, 0.5)));
}

TEST(Linalg, InvAndSolve) {
  Array a = randm({5, 5}, 20) + np::eye(5, {}, 0, DType::float64);
  Array ai = np::linalg::inv(a);
  EXPECT_TRUE(all_close(np::matmul(a, ai), vals(np::eye(5, {}, 0, DType::float64)), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(np::linalg::inv(np::array({{4.0, 7.0}, {2.0, 6.0}}, DType::float64)), {0.6, -0.7, -0.2, 0.4},
                        1e-14, 1e-14));
  // pivoting is needed: a zero in the (0,0) position
  Array p = np::array({{0.0, 1.0}, {1.0, 0.0}}, DType::float64);
  EXPECT_TRUE(all_close(np::linalg::inv(p), {0, 1, 1, 0}));
  Array batch = randm({3, 4, 4}, 21);
  Array bi = np::linalg::inv(batch);
  EXPECT_TRUE(all_close(np::matmul(bi, batch), vals(np::broadcast_to(np::eye(4, {}, 0, DType::float64), {3, 4, 4})),
                        1e-10, 1e-10));
  Array b = randm({5}, 22);
  Array x = np::linalg::solve(a, b);
  EXPECT_EQ(x.shape(), (Shape{5}));
  EXPECT_TRUE(all_close(np::matmul(a, x), vals(b), 1e-12, 1e-12));
  Array B = randm({5, 2}, 23);
  EXPECT_TRUE(all_close(np::matmul(a, np::linalg::solve(a, B)), vals(B), 1e-12, 1e-12));
  Array i32 = np::linalg::inv(np::array({{2.0, 0.0}, {0.0, 4.0}}, DType::int32));
  EXPECT_EQ(i32.dtype(), DType::float32);
  EXPECT_TRUE(all_close(i32, {0.5, 0, 0, 0.25}));
}

// inv is one primitive: its derivative is -X Ȧ X (no lu or triangular solve in the gradient),
// equal to that of its expansion through lu to every order checked (gradient, Hessian), and jit
// runs the expansion (the same values as inv_by_lu eagerly).
TEST(Linalg, InvIsOnePrimitiveDifferentiatedAsAWhole) {
  Array a = randm({4, 4}, 30) + np::eye(4, {}, 0, DType::float64) * 4.0;
  Array w = randm({4, 4}, 31);
  auto f = [&](const Array& x) { return np::sum(np::linalg::inv(x) * w); };
  auto g = [&](const Array& x) { return np::sum(np::linalg::inv_by_lu(x) * w); };
  Array xi = np::linalg::inv_by_lu(a);
  Array expect = -np::matmul(np::matmul(np::transpose(xi), w), np::transpose(xi));  // d<W, A⁻¹>/dA
  EXPECT_TRUE(all_close(grad(f)(a), vals(expect), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(grad(g)(a), vals(expect), 1e-12, 1e-12));
  Array hf = hessian(f)(a), hg = hessian(g)(a);
  EXPECT_EQ(hf.shape(), (Shape{4, 4, 4, 4}));
  EXPECT_TRUE(all_close(hf, vals(hg), 1e-10, 1e-10));
  std::map<std::string, int> count;
  for (const Eqn& e : make_jaxpr(grad(f))(a).jaxpr.eqns) ++count[std::string(prim_name(e.prim))];
  EXPECT_EQ(count["inv"], 1);
  EXPECT_EQ(count["lu"] + count["triangular_solve"], 0);
  EXPECT_TRUE(all_close(jit([](const Array& x) { return np::linalg::inv(x); })(a), vals(xi), 0.0, 0.0));
  EXPECT_TRUE(all_close(jit(grad(f))(a), vals(expect), 1e-12, 1e-12));
  Array batch = randm({3, 4, 4}, 32) + np::eye(4, {}, 0, DType::float64) * 4.0;
  EXPECT_TRUE(all_close(vmap([](const Array& x) { return np::linalg::inv(x); })(batch),
                        vals(np::linalg::inv_by_lu(batch)), 0.0, 0.0));
}

TEST(Linalg, SingularMatricesAreErrors) {
  Array s = np::array({{1.0, 2.0}, {2.0, 4.0}}, DType::float64);
  EXPECT_TRUE(
      jxt::throws_with<LinAlgError>([&] { np::linalg::inv(s); }, {"inv: triangular_solve: matrix is singular"}));
  EXPECT_TRUE(jxt::throws_with<LinAlgError>([&] { np::linalg::solve(s, np::ones({2}, DType::float64)); },
                                            {"solve:", "singular"}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [] {
        np::linalg::inv(np::zeros({2, 3}));
      },
      "inv: expected a (batch of) square matrices [..., n, n], got float32[2,3]"));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { np::linalg::solve(np::eye(3), np::ones({2})); },
                                           {"solve: cannot solve float32[3,3]"}));
}

TEST(Linalg, SlogdetAndDet) {
  Array a = np::array({{4.0, 7.0}, {2.0, 6.0}}, DType::float64);
  auto [s, l] = np::linalg::slogdet(a);
  EXPECT_DOUBLE_EQ(s.item<double>(), 1.0);
  EXPECT_NEAR(l.item<double>(), std::log(10.0), 1e-14);
  auto [s2, l2] = np::linalg::slogdet(np::array({{0.0, 1.0}, {1.0, 0.0}}, DType::float64));
  EXPECT_DOUBLE_EQ(s2.item<double>(), -1.0);  // one row swap
  EXPECT_NEAR(l2.item<double>(), 0.0, 1e-15);
  auto [s3, l3] = np::linalg::slogdet(np::array({{1.0, 2.0}, {2.0, 4.0}}, DType::float64));
  EXPECT_DOUBLE_EQ(s3.item<double>(), 0.0);
  EXPECT_EQ(l3.item<double>(), -std::numeric_limits<double>::infinity());
  Array m = randm({3, 3}, 30);
  auto v = vals(m);
  const double det3 =
      v[0] * (v[4] * v[8] - v[5] * v[7]) - v[1] * (v[3] * v[8] - v[5] * v[6]) + v[2] * (v[3] * v[7] - v[4] * v[6]);
  EXPECT_NEAR(np::linalg::det(m).item<double>(), det3, 1e-12 * std::abs(det3) + 1e-14);
  Array batch = np::stack({a, np::array({{-2.0, 0.0}, {0.0, 3.0}}, DType::float64)});
  EXPECT_TRUE(all_close(np::linalg::det(batch), {10, -6}, 1e-13));
  auto [sb, lb] = np::linalg::slogdet(np::astype(batch, DType::float32));
  EXPECT_EQ(lb.dtype(), DType::float32);
  EXPECT_TRUE(all_close(sb, {1, -1}));
  EXPECT_TRUE(all_close(lb, {std::log(10.0), std::log(6.0)}, 1e-6));
}
