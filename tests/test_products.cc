#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;

namespace {
// Naive batched matmul of row-major [B,m,k]·[B,k,n].
std::vector<double> ref_bmm(const std::vector<double>& a, const std::vector<double>& b, int B, int m, int k, int n) {
  std::vector<double> c(static_cast<std::size_t>(B * m * n), 0.0);
  for (int q = 0; q < B; ++q)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        for (int l = 0; l < k; ++l) c[(q * m + i) * n + j] += a[(q * m + i) * k + l] * b[(q * k + l) * n + j];
  return c;
}
Array f64(const std::vector<double>& v, Shape s) { return np::array(v, s, DType::float64); }
}  // namespace

TEST(Matmul, TwoDAndBatched) {
  auto a = jxt::randn(2 * 3 * 4, 1), b = jxt::randn(2 * 4 * 5, 2);
  EXPECT_TRUE(all_close(np::matmul(f64(a, {2, 3, 4}), f64(b, {2, 4, 5})), ref_bmm(a, b, 2, 3, 4, 5)));
  std::vector<double> a0(a.begin(), a.begin() + 12);
  Array r = np::matmul(f64(a0, {3, 4}), f64(b, {2, 4, 5}));  // batch broadcast
  EXPECT_EQ(r.shape(), (Shape{2, 3, 5}));
  std::vector<double> a2 = a0;
  a2.insert(a2.end(), a0.begin(), a0.end());
  EXPECT_TRUE(all_close(r, ref_bmm(a2, b, 2, 3, 4, 5)));
  Array f32 =
      np::matmul(np::array(a0, Shape{3, 4}), np::array(std::vector<double>(b.begin(), b.begin() + 20), Shape{4, 5}));
  EXPECT_EQ(f32.dtype(), DType::float32);
  EXPECT_TRUE(all_close(f32, ref_bmm(a0, b, 1, 3, 4, 5), 1e-5, 1e-5));
  Array i = np::matmul(np::array({{1, 2}, {3, 4}}, DType::int32), np::array({{5, 6}, {7, 8}}, DType::int32));
  EXPECT_EQ(i.dtype(), DType::int32);
  EXPECT_EQ(i.to_vector<int>(), (std::vector<int>{19, 22, 43, 50}));
}

TEST(Matmul, VectorCasesAndDot) {
  Array m = np::array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  Array v = np::array({1.0, -1.0});
  EXPECT_TRUE(all_close(np::matmul(m, v), {-1, -1, -1}));
  EXPECT_TRUE(all_close(np::matmul(np::array({1.0, 0.0, 1.0}), m), {6, 8}));
  Array d = np::matmul(v, v);
  EXPECT_EQ(d.shape(), Shape{});
  EXPECT_DOUBLE_EQ(d.item<double>(), 2.0);
  EXPECT_DOUBLE_EQ(np::dot(v, v).item<double>(), 2.0);
  EXPECT_TRUE(all_close(np::dot(np::scalar(2.0), v), {2, -2}));
  EXPECT_EQ(np::matmul(np::zeros({0, 3}), np::zeros({3, 2})).shape(), (Shape{0, 2}));
  EXPECT_TRUE(all_close(np::matmul(np::zeros({2, 0}), np::zeros({0, 2})), {0, 0, 0, 0}));  // empty contraction
}

TEST(Matmul, Errors) {
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [] {
        np::matmul(np::zeros({2, 3}), np::zeros({4, 5}));
      },
      "matmul: contracting dimensions differ: float32[2,3] with float32[4,5] (3 != 4)"));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { np::matmul(np::zeros({2, 2, 3}), np::zeros({3, 3, 1})); }, {"batch"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { np::matmul(np::scalar(1), np::zeros({2})); }, {"scalar"}));
}

TEST(DotGeneral, BatchAndContractingDims) {
  auto a = jxt::randn(2 * 3 * 4, 3), b = jxt::randn(2 * 4 * 5, 4);
  // lhs [4,2,3] (contract 0, batch 1), rhs [2,5,4] (contract 2, batch 0): out [2,3,5]
  Array A = np::transpose(f64(a, {2, 3, 4}), std::vector<std::int64_t>{2, 0, 1});
  Array B = np::transpose(f64(b, {2, 4, 5}), std::vector<std::int64_t>{0, 2, 1});
  Array r = lax::dot_general(A, B, {{0}, {2}, {1}, {0}});
  EXPECT_EQ(r.shape(), (Shape{2, 3, 5}));
  EXPECT_TRUE(all_close(r, ref_bmm(a, b, 2, 3, 4, 5)));
  // outer product: no contraction
  Array o = lax::dot_general(np::array({1.0, 2.0}), np::array({3.0, 4.0, 5.0}), {});
  EXPECT_TRUE(all_close(o, {3, 4, 5, 6, 8, 10}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] {
        lax::dot_general(np::zeros({2, 3}), np::zeros({4, 3}), {{1}, {0}, {}, {}});
      },
      {"dot_general: contracting dimension sizes differ", "lhs dim 1 = 3", "rhs dim 0 = 4"}));
  EXPECT_THROW(lax::dot_general(np::zeros({2}), np::zeros({2}), {{0}, {1}, {}, {}}), ShapeError);
}

TEST(Einsum, TwoAndThreeOperands) {
  auto a = jxt::randn(2 * 3 * 4, 5), b = jxt::randn(2 * 4 * 5, 6);
  EXPECT_TRUE(all_close(np::einsum("nij,njk->nik", f64(a, {2, 3, 4}), f64(b, {2, 4, 5})), ref_bmm(a, b, 2, 3, 4, 5)));
  std::vector<double> a0(a.begin(), a.begin() + 12), b0(b.begin(), b.begin() + 20);
  EXPECT_TRUE(all_close(np::einsum("ij,jk->ik", f64(a0, {3, 4}), f64(b0, {4, 5})), ref_bmm(a0, b0, 1, 3, 4, 5)));
  EXPECT_TRUE(
      all_close(np::einsum("ij,jk", f64(a0, {3, 4}), f64(b0, {4, 5})), ref_bmm(a0, b0, 1, 3, 4, 5)));  // implicit
  // ij,jk,lk->il  =  A B Cᵀ
  auto c = jxt::randn(6 * 5, 7);
  Array C = f64(c, {6, 5});
  Array want = np::matmul(np::matmul(f64(a0, {3, 4}), f64(b0, {4, 5})), np::transpose(C));
  Array got = np::einsum("ij,jk,lk->il", f64(a0, {3, 4}), f64(b0, {4, 5}), C);
  EXPECT_EQ(got.shape(), (Shape{3, 6}));
  EXPECT_TRUE(all_close(got, jxt::vals(want), 1e-12, 1e-12));
  // Kalman-style A·P·Aᵀ in one call
  Array P = f64({2, 1, 1, 3}, {2, 2}), G = f64({1, 1, 0, 1}, {2, 2});
  EXPECT_TRUE(all_close(np::einsum("ij,jk,lk->il", G, P, G), {7, 4, 4, 3}));
}

TEST(Einsum, TracesTransposesReductions) {
  Array m = np::array({{1.0, 2.0}, {3.0, 4.0}}, DType::float64);
  EXPECT_TRUE(all_close(np::einsum("ii->i", m), {1, 4}));
  EXPECT_TRUE(all_close(np::einsum("ii", m), {5}));
  EXPECT_TRUE(all_close(np::einsum("ij->ji", m), {1, 3, 2, 4}));
  EXPECT_TRUE(all_close(np::einsum("ij->", m), {10}));
  EXPECT_TRUE(all_close(np::einsum("ij->j", m), {4, 6}));
  EXPECT_TRUE(all_close(np::einsum("i,i->", np::array({1.0, 2.0}), np::array({3.0, 4.0})), {11}));
  EXPECT_TRUE(all_close(np::einsum("i,j->ij", np::array({1.0, 2.0}), np::array({3.0, 4.0})), {3, 4, 6, 8}));
}

TEST(Einsum, Errors) {
  Array m = np::zeros({2, 3});
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [&] {
        np::einsum("ij,jk->ik", m, np::zeros({4, 2}));
      },
      {"einsum: size of label 'j' differs", "ij,jk->ik"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::einsum("ijk->i", m); }, {"term 'ijk' has 3 letters"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::einsum("ij->iz", m); }, {"output letter 'z'"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::einsum("ij,jk->ik", m); }, {"2 operand terms for 1 operands"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::einsum("...i->i", m); }, {"ellipsis"}));
}
