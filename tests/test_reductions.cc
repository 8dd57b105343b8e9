#include <limits>

#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
// x[i,j,k] = 100 i + 10 j + k over [2,3,4]
Array cube(DType d = DType::float64) {
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) v.push_back(100 * i + 10 * j + k);
  return np::array(v, Shape{2, 3, 4}, d);
}
}  // namespace

TEST(Reductions, SumOverEveryAxisSet) {
  Array x = cube();
  EXPECT_TRUE(all_close(np::sum(x), {2 * 3 * 4 * 0 + (0 + 100) * 12 + (0 + 10 + 20) * 8 + (0 + 1 + 2 + 3) * 6}));
  Array s0 = np::sum(x, std::vector<std::int64_t>{0});
  EXPECT_EQ(s0.shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(s0, {100, 102, 104, 106, 120, 122, 124, 126, 140, 142, 144, 146}));
  Array s12 = np::sum(x, std::vector<std::int64_t>{-1, 1});  // negative axes, any order
  EXPECT_TRUE(all_close(s12, {0 * 12 + 30 * 4 + 6 * 3, 100 * 12 + 30 * 4 + 6 * 3}));
  Array k = np::sum(x, std::vector<std::int64_t>{1}, true);
  EXPECT_EQ(k.shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(np::sum(x, std::vector<std::int64_t>{}).shape(), (Shape{2, 3, 4}));  // empty axis list: identity
  EXPECT_EQ(np::sum(x, std::nullopt, true).shape(), (Shape{1, 1, 1}));
}

TEST(Reductions, MaxMinMeanProd) {
  Array x = cube();
  EXPECT_TRUE(all_close(np::max(x, std::vector<std::int64_t>{2}), {3, 13, 23, 103, 113, 123}));
  EXPECT_TRUE(all_close(np::min(x, std::vector<std::int64_t>{0, 2}), {0, 10, 20}));
  EXPECT_TRUE(all_close(np::mean(x, std::vector<std::int64_t>{1}), {10, 11, 12, 13, 110, 111, 112, 113}));
  EXPECT_TRUE(all_close(np::prod(np::array({{1.0, 2.0}, {3.0, 4.0}}), std::vector<std::int64_t>{1}), {2, 12}));
  EXPECT_EQ(np::mean(np::array({1.0, 2.0}, DType::int32)).dtype(), DType::float32);
  EXPECT_TRUE(all_close(np::mean(np::array({1.0, 2.0}, DType::int32)), {1.5}));
  EXPECT_EQ(np::sum(np::array({1.0, 0.0, 1.0}, DType::bool_)).dtype(), DType::int32);
  EXPECT_TRUE(all_close(np::sum(np::array({1.0, 0.0, 1.0}, DType::bool_)), {2}));
  EXPECT_TRUE(all_close(np::max(np::array({-5.0, -2.0}, DType::int32)), {-2}));
}

TEST(Reductions, Float32SumAccumulatesAccurately) {
  // 60000 elements: one reduction loop stays under llvmpipe's 65535-iteration loop limit
  Array x = np::full({60000}, 0.1, DType::float32);
  EXPECT_TRUE(all_close(np::sum(x), {60000 * static_cast<double>(0.1f)}, 1e-7));
}

TEST(Reductions, EmptyAxes) {
  Array e = np::zeros({0, 3});
  EXPECT_TRUE(all_close(np::sum(e, std::vector<std::int64_t>{0}), {0, 0, 0}));
  EXPECT_TRUE(all_close(np::prod(e, std::vector<std::int64_t>{0}), {1, 1, 1}));
  EXPECT_EQ(np::sum(e, std::vector<std::int64_t>{1}).shape(), (Shape{0}));
  EXPECT_TRUE(all_close(np::mean(e, std::vector<std::int64_t>{0}), {kNaN, kNaN, kNaN}));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>([&] { np::max(e, std::vector<std::int64_t>{0}); },
                                          "max: zero-size axis 0 of float32[0,3] has no identity"));
  EXPECT_TRUE(all_close(np::max(e, std::vector<std::int64_t>{1}), {}));  // non-empty reduced axis
}

TEST(Reductions, NaNAndInf) {
  Array x = np::array({{1.0, kNaN, 3.0}, {-kInf, 2.0, 0.0}}, DType::float64);
  EXPECT_TRUE(all_close(np::sum(x, std::vector<std::int64_t>{1}), {kNaN, -kInf}));
  EXPECT_TRUE(all_close(np::max(x, std::vector<std::int64_t>{1}), {kNaN, 2}));
  EXPECT_TRUE(all_close(np::min(x, std::vector<std::int64_t>{1}), {kNaN, -kInf}));
  EXPECT_TRUE(all_close(np::max(x, std::vector<std::int64_t>{0}), {1, kNaN, 3}));
}

TEST(Reductions, ArgmaxArgmin) {
  Array x = np::array({{1.0, 5.0, 5.0}, {7.0, 0.0, -1.0}});
  EXPECT_EQ(np::argmax(x, 1).to_vector<int>(), (std::vector<int>{1, 0}));  // first of ties
  EXPECT_EQ(np::argmin(x, 1).to_vector<int>(), (std::vector<int>{0, 2}));
  EXPECT_EQ(np::argmax(x, 0).to_vector<int>(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(np::argmax(x, -2).to_vector<int>(), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(np::argmax(x).item<int>(), 3);  // flattened
  EXPECT_EQ(np::argmin(x).item<int>(), 5);
  EXPECT_EQ(np::argmax(x).dtype(), DType::int32);
  EXPECT_EQ(np::argmax(np::array({1.0, kNaN, 9.0, kNaN})).item<int>(), 1);  // first NaN wins
  EXPECT_EQ(np::argmin(np::array({1.0, kNaN, -9.0})).item<int>(), 1);
  EXPECT_THROW(np::argmax(np::zeros({0})), ShapeError);
  EXPECT_THROW(np::argmax(np::zeros({2, 0}), 1), ShapeError);
}

TEST(Reductions, BadAxes) {
  Array x = np::zeros({2, 3});
  EXPECT_TRUE(jxt::throws_msg<ShapeError>([&] { np::sum(x, std::vector<std::int64_t>{2}); },
                                          "sum: axis 2 is out of bounds for an array of rank 2"));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>([&] { np::sum(x, std::vector<std::int64_t>{-3}); },
                                          "sum: axis -3 is out of bounds for an array of rank 2"));
  EXPECT_TRUE(jxt::throws_msg<ShapeError>(
      [&] {
        np::mean(x, std::vector<std::int64_t>{1, -1});
      },
      "mean: repeated axis -1"));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { np::argmin(x, 5); }, {"argmin", "axis 5"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { lax::reduce_sum(x, {0, 0}); }, {"reduce_sum: repeated axis 0"}));
}

TEST(Reductions, Int32AndFloat32Dtypes) {
  EXPECT_EQ(np::sum(cube(DType::int32)).item<int>(), 2 * 3 * 4 * 0 + 1200 + 240 + 36);
  EXPECT_EQ(np::sum(cube(DType::float32)).dtype(), DType::float32);
  EXPECT_EQ(np::max(cube(DType::int32), std::vector<std::int64_t>{0, 1}).to_vector<int>(),
            (std::vector<int>{120, 121, 122, 123}));
}
