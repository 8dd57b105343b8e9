#include <numeric>

#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;
using S = np::Slice;

namespace {
Array iota_f(Shape s) {
  std::vector<double> v(static_cast<std::size_t>(numel(s)));
  std::iota(v.begin(), v.end(), 0.0);
  return np::array(v, s, DType::float64);
}
}  // namespace

TEST(Creation, Constructors) {
  EXPECT_TRUE(all_close(np::zeros({2, 2}), {0, 0, 0, 0}));
  EXPECT_TRUE(all_close(np::ones({3}, DType::int32), {1, 1, 1}));
  EXPECT_TRUE(all_close(np::full({2}, 2.5, DType::float64), {2.5, 2.5}));
  EXPECT_EQ(np::zeros({}).shape(), Shape{});
  EXPECT_EQ(np::zeros({0, 4}).size(), 0);
  EXPECT_TRUE(all_close(np::eye(3), {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(all_close(np::eye(2, 3, 1), {0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(all_close(np::eye(3, 2, -1), {0, 0, 1, 0, 0, 1}));
  EXPECT_TRUE(all_close(np::arange(5), {0, 1, 2, 3, 4}));
  EXPECT_EQ(np::arange(5).dtype(), DType::int32);
  EXPECT_TRUE(all_close(np::arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(np::arange(1, 2, 0.25).dtype(), DType::float32);
  EXPECT_TRUE(all_close(np::arange(5, 0, -2), {5, 3, 1}));
  EXPECT_EQ(np::arange(3, 1).size(), 0);
  EXPECT_THROW(np::arange(0, 1, 0), ShapeError);
  EXPECT_TRUE(all_close(np::linspace(0, 1, 5, true, DType::float64), {0, 0.25, 0.5, 0.75, 1}));
  EXPECT_TRUE(all_close(np::linspace(0, 1, 4, false, DType::float64), {0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(np::linspace(0, 1, 0).size(), 0);
  EXPECT_TRUE(all_close(np::linspace(2, 3, 1, true, DType::float64), {2}));
  EXPECT_THROW(np::full({-1}, 0), ShapeError);
  EXPECT_TRUE(all_close(np::zeros_like(np::ones({2}, DType::int32)), {0, 0}));
  EXPECT_EQ(np::full_like(np::ones({2}, DType::float64), 3).dtype(), DType::float64);
}

TEST(Creation, NestedListsAndVectors) {
  Array a = np::array({{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12}}});
  EXPECT_EQ(a.shape(), (Shape{2, 3, 2}));
  EXPECT_TRUE(all_close(a, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { np::array({{1.0, 2.0}, {3.0}}); }, {"ragged"}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [] {
        np::array(std::vector<double>{1, 2, 3}, Shape{2, 2});
      },
      "array: 3 values do not fill shape [2,2]"));
  EXPECT_EQ(np::array(std::vector<float>{1.f, 2.f}).dtype(), DType::float32);
  EXPECT_EQ(np::array(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{2, 2}).shape(), (Shape{2, 2}));
  EXPECT_THROW(np::array({1e10}, DType::int32), ShapeError);
}

TEST(ShapeOps, ReshapeRavelSqueezeExpand) {
  Array x = iota_f({2, 3, 4});
  EXPECT_EQ(np::reshape(x, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_TRUE(all_close(np::reshape(x, {-1}), jxt::vals(np::ravel(x))));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [&] {
        np::reshape(x, {5, -1});
      },
      "reshape: cannot reshape float64[2,3,4] into shape [5,-1]"));
  EXPECT_THROW(np::reshape(x, {-1, -1}), ShapeError);
  EXPECT_THROW(np::reshape(x, {7}), ShapeError);
  Array s = np::zeros({1, 3, 1});
  EXPECT_EQ(np::squeeze(s).shape(), (Shape{3}));
  EXPECT_EQ(np::squeeze(s, std::vector<std::int64_t>{-1}).shape(), (Shape{1, 3}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>([&] { np::squeeze(s, std::vector<std::int64_t>{1}); },
                                          "squeeze: cannot select axis 1 of float32[1,3,1]: its size is not 1"));
  EXPECT_EQ(np::expand_dims(np::zeros({2, 3}), -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(np::expand_dims(np::zeros({2, 3}), 0).shape(), (Shape{1, 2, 3}));
  EXPECT_THROW(np::expand_dims(np::zeros({2, 3}), 4), ShapeError);
  EXPECT_EQ(np::broadcast_to(np::ones({3}), {2, 3}).shape(), (Shape{2, 3}));
}

TEST(ShapeOps, TransposeFamily) {
  Array x = iota_f({2, 3});
  EXPECT_TRUE(all_close(np::transpose(x), {0, 3, 1, 4, 2, 5}));
  Array y = iota_f({2, 3, 4});
  Array t = np::transpose(y, std::vector<std::int64_t>{1, 2, 0});
  EXPECT_EQ(t.shape(), (Shape{3, 4, 2}));
  EXPECT_DOUBLE_EQ(jxt::vals(t)[(1 * 4 + 2) * 2 + 1], 1 * 12 + 1 * 4 + 2);  // t[1,2,1] = y[1,1,2]
  EXPECT_EQ(np::swapaxes(y, 0, -1).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(np::moveaxis(y, 0, -1).shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(np::moveaxis(y, -1, 0).shape(), (Shape{4, 2, 3}));
  EXPECT_TRUE(all_close(np::moveaxis(y, 0, -1), jxt::vals(t)));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [&] {
        np::transpose(y, std::vector<std::int64_t>{0, 0, 1});
      },
      {"repeated axis"}));
  EXPECT_THROW(np::transpose(y, std::vector<std::int64_t>{0, 1}), ShapeError);
  EXPECT_THROW(np::swapaxes(y, 0, 3), ShapeError);
}

TEST(ShapeOps, StaticSlicingWithSteps) {
  Array x = iota_f({10});
  EXPECT_TRUE(all_close(np::index(x, {S{2, 8, 2}}), {2, 4, 6}));
  EXPECT_TRUE(all_close(np::index(x, {S{{}, {}, 3}}), {0, 3, 6, 9}));
  EXPECT_TRUE(all_close(np::index(x, {S{{}, {}, -1}}), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_TRUE(all_close(np::index(x, {S{7, 2, -2}}), {7, 5, 3}));
  EXPECT_TRUE(all_close(np::index(x, {S{-3, {}}}), {7, 8, 9}));
  EXPECT_TRUE(all_close(np::index(x, {S{-2, {}, -3}}), {8, 5, 2}));
  EXPECT_EQ(np::index(x, {S{5, 2}}).size(), 0);
  EXPECT_EQ(np::index(x, {std::int64_t{-1}}).shape(), Shape{});
  EXPECT_DOUBLE_EQ(np::index(x, {std::int64_t{-1}}).item<double>(), 9);
  Array m = iota_f({3, 4});
  Array r = np::index(m, {std::int64_t{1}, S{{}, {}, 2}});
  EXPECT_TRUE(all_close(r, {4, 6}));
  EXPECT_EQ(np::index(m, {S{1, 3}}).shape(), (Shape{2, 4}));
  EXPECT_TRUE(all_close(np::index(m, {S{}, std::int64_t{3}}), {3, 7, 11}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>([&] { np::index(x, {std::int64_t{10}}); },
                                          "index: index 10 is out of bounds for axis 0 with size 10 of float64[10]"));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [&] {
        np::index(x, {S{0, 11}});
      },
      "index: slice stop 11 is out of range for axis 0 of float64[10]"));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::index(x, {S{0, 5, 0}}); }, {"step cannot be zero"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::index(m, {S{}, S{}, S{}}); }, {"too many indices"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { lax::slice(x, {4}, {2}); }, {"slice [4:2] is out of range"}));
}

TEST(ShapeOps, ConcatenateStackSplit) {
  Array a = iota_f({2, 2}), b = np::ones({2, 1}, DType::int32);
  Array c = np::concatenate({a, b}, 1);
  EXPECT_EQ(c.dtype(), DType::float64);
  EXPECT_TRUE(all_close(c, {0, 1, 1, 2, 3, 1}));
  EXPECT_TRUE(all_close(np::concatenate({a, a}, -2), {0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(np::concatenate({a, np::zeros({0, 2}, DType::float64)}).shape(), (Shape{2, 2}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [&] {
        np::concatenate({a, b}, 0);
      },
      {"concatenate: operands differ outside axis 0", "float64[2,2]", "float64[2,1]"}));
  EXPECT_THROW(np::concatenate({a, b}, 2), ShapeError);
  EXPECT_THROW(np::concatenate({}), ShapeError);
  EXPECT_THROW(np::concatenate({np::scalar(1), np::scalar(2)}), ShapeError);
  Array s = np::stack({np::array({1.0, 2.0}), np::array({3.0, 4.0})}, 1);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_TRUE(all_close(s, {1, 3, 2, 4}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [] {
        np::stack({np::ones({2}), np::ones({3})});
      },
      "stack: all input arrays must have the same shape, got float32[2] and float32[3]"));
  auto parts = np::split(iota_f({6}), 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(all_close(parts[2], {4, 5}));
  auto at = np::split(iota_f({2, 5}), std::vector<std::int64_t>{1, 3}, 1);
  ASSERT_EQ(at.size(), 3u);
  EXPECT_TRUE(all_close(at[1], {1, 2, 6, 7}));
  EXPECT_EQ(at[2].shape(), (Shape{2, 2}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { np::split(np::ones({5}), 2); }, {"equal division"}));
}

TEST(ShapeOps, PadFlipDiagonalTrace) {
  Array a = iota_f({2, 2});
  Array p = np::pad(a, {{1, 0}, {0, 2}}, -1);
  EXPECT_EQ(p.shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(p, {-1, -1, -1, -1, 0, 1, -1, -1, 2, 3, -1, -1}));
  EXPECT_EQ(np::pad(a, {{1, 1}}).shape(), (Shape{4, 4}));
  EXPECT_THROW(np::pad(a, {{-1, 0}, {0, 0}}), ShapeError);
  EXPECT_THROW(np::pad(a, {{0, 0}, {0, 0}, {0, 0}}), ShapeError);
  EXPECT_TRUE(all_close(np::flip(a), {3, 2, 1, 0}));
  EXPECT_TRUE(all_close(np::flip(a, std::vector<std::int64_t>{1}), {1, 0, 3, 2}));
  Array m = iota_f({3, 4});
  EXPECT_TRUE(all_close(np::diagonal(m), {0, 5, 10}));
  EXPECT_TRUE(all_close(np::diagonal(m, 1), {1, 6, 11}));
  EXPECT_TRUE(all_close(np::diagonal(m, 2), {2, 7}));
  EXPECT_TRUE(all_close(np::diagonal(m, -1), {4, 9}));
  EXPECT_EQ(np::diagonal(m, 4).size(), 0);
  EXPECT_EQ(np::diagonal(m, -3).size(), 0);
  Array b = iota_f({2, 2, 2});
  EXPECT_TRUE(all_close(np::diagonal(b, 0, 1, 2), {0, 3, 4, 7}));  // batched over axis 0
  EXPECT_TRUE(all_close(np::diagonal(b, 0, 0, 2), {0, 5, 2, 7}));
  EXPECT_TRUE(all_close(np::trace(m), {15}));
  EXPECT_TRUE(all_close(np::trace(b, 0, 1, 2), {3, 11}));
  EXPECT_THROW(np::diagonal(np::ones({3})), ShapeError);
  EXPECT_THROW(np::diagonal(m, 0, 1, 1), ShapeError);
}

TEST(ShapeOps, TriuTril) {
  Array m = iota_f({3, 3}) + 1.0;
  EXPECT_TRUE(all_close(np::triu(m), {1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_TRUE(all_close(np::tril(m), {1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_TRUE(all_close(np::triu(m, 1), {0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_TRUE(all_close(np::tril(m, -1), {0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(np::tril(np::ones({2, 3, 3})).shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(np::tril(m).dtype(), DType::float64);
  EXPECT_THROW(np::triu(np::ones({3})), ShapeError);
}

TEST(ShapeOps, SliceInDimChecksItsAxis) {
  Array x = np::reshape(np::arange(0, 6, 1, DType::float32), {2, 3});
  EXPECT_TRUE(all_close(lax::slice_in_dim(x, 1, 3, 1, -1), {1, 2, 4, 5}));  // negative axes count from the end
  EXPECT_THROW((void)lax::slice_in_dim(x, 0, 1, 1, 2), ShapeError);         // once wrote past its vectors
  EXPECT_THROW((void)lax::slice_in_dim(x, 0, 1, 1, -3), ShapeError);
}
