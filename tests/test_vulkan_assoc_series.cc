// Vmapped associative scans on vulkan (part of the test_vulkan_scan binary): the unbatched
// combine's blocked form run per series (the series the dispatches' depth), its plan for many
// series (small workgroups below the top, the top's own workgroup), shared leaves and the
// gradient through it; values against the cpu oracle or native.
#include <regex>

#include <fmt/format.h>

#include "core/instrument/instrument.h"
#include "core/transform/control_internal.h"
#include "tests/kalman_elems.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using namespace jxt;  // the kalman_elems.h and vulkan_helpers.h helpers, as test_autodiff_prims.cc does

// A vmapped associative scan whose every leaf is batched runs its unbatched combine as the blocked
// form for all series at once (the series the dispatches' depth), on its slice of the leaves (the
// batch axis right before the scan axis: a series' positions lie together) and of the batched constants; values equal to the cpu
// oracle (one position per workgroup's level; three levels, reversed) and to the batched form
// (JX_VK_SERIES=0). 256 series take one position per invocation in workgroups of 64, the top
// level too (1500 positions reversed: 23 totals; 2100: 32): a level, the top, a fix-up. The
// gradient through it: scenario dlm-b1024-gradient.
TEST(VulkanAssociativeScan, VmappedScansRunPerSeries) {
  using V = std::vector<Array>;
  for (auto [B, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{7, 5}, {7, 1000}, {256, 1500}, {256, 2100}}) {
    const bool reverse = n == 1000 || n == 1500;
    {
      // elements (n, B, 2, 2), (n, B, 2, 1), (n, B, 2, 2) and (n, B, 1); a batched constant in the combine
      Array scale = np::reshape(np::arange(1, B + 1, 1, DType::float32), {B}) * 0.01 + 1.0;
      auto per_series = [reverse](const Array& s, const Array& A, const Array& b, const Array& S) {
        auto out = lax::associative_scan_flat(
            [&](const V& x, const V& y) {
              Elem e = kcompose({x[0], x[1], x[2]}, {y[0], y[1], y[2]});
              return V{std::get<0>(e), std::get<1>(e), std::get<2>(e), x[3] + y[3] + s};  // associative in s too
            },
            {A, b, S, np::ones({A.shape()[0], 1}, A.dtype())}, reverse, 0);
        return out;
      };
      auto [A, b, S] = kelems(static_cast<int>(n * B), DType::float32);
      A = np::reshape(A, {B, n, 2, 2}), b = np::reshape(b, {B, n, 2, 1}), S = np::reshape(S, {B, n, 2, 2});
      auto f = vmap(
          [&](const Array& s, const Array& a, const Array& bb, const Array& ss) { return per_series(s, a, bb, ss); });
      V want;
      {
        // the oracle (and, under JX_DEVICE=vulkan, no compile before the jit call); 256 series:
        // native's compiled fold, which the 7-series cases check against the cpu oracle (the
        // interpreter takes minutes over 256 series under ASan)
        const bool many = B > 7;
        DefaultDeviceScope scope(many ? "native" : "cpu");
        const V r = on({scale, A, b, S}, many ? "native" : "cpu");
        want = many ? jit(f)(r[0], r[1], r[2], r[3]) : f(r[0], r[1], r[2], r[3]);
        if (!many) {
          DefaultDeviceScope nat("native");
          const V nr = on({scale, A, b, S}, "native");
          const V nv = jit(f)(nr[0], nr[1], nr[2], nr[3]);
          for (std::size_t i = 0; i < 4; ++i)
            EXPECT_TRUE(all_close(nv[i], vals(want[i]), 2e-4, 2e-4)) << "native " << i;
        }
      }
      auto jf = jit(f);
      V in = on({scale, A, b, S}, "vulkan");
      std::vector<std::string> shaders;  // compiled by the first call
      V got;
      std::string log;
      {
        trace::Subscription sub([&](const trace::Event& e) {
          if (e.kind == trace::EventKind::compile) shaders.push_back(e.detail);
        });
        log = jxt::debug_log_of([&] { got = jf(in[0], in[1], in[2], in[3]); });
      }
      EXPECT_NE(std::find(shaders.begin(), shaders.end(), "associative_scan_series"), shaders.end())
          << "n " << n << ": " << fmt::format("{}", fmt::join(shaders, ", "));
      if (B > 7) {
        EXPECT_NE(log.find("blocked: 3 dispatches (each workgroup scans 64 positions in its memory, the top level 1 "
                           "per invocation, then fix-ups;"),
                  std::string::npos)
            << log;
      }
      for (std::size_t i = 0; i < 4; ++i)
        EXPECT_TRUE(all_close(got[i], vals(want[i]), 2e-4, 2e-4))
            << "n " << n << " reverse " << reverse << " leaf " << i;
      const std::uint64_t per = dispatches_of([&] { (void)jf(in[0], in[1], in[2], in[3]); });
      EXPECT_LE(per, 12u) << n;
      if (B > 7) continue;  // the batched form of 256 series: one cooperative combine each, slow on llvmpipe
      ScopedEnv off("JX_VK_SERIES", "0");
      clear_caches();
      V batched = jit(f)(in[0], in[1], in[2], in[3]);
      for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(all_close(batched[i], vals(want[i]), 2e-4, 2e-4));
      clear_caches();
    }
  }
}

// Many series of a large element (a scalar and a 32-vector: 33 words, too many for several
// positions an invocation): the levels below the top run in workgroups of one warp (5 rounds of
// combines, not 7 or 8; the combine's registers leave few warps resident, so its rounds set a
// level's time), the top level in a workgroup of its own, the least power of two holding it.
// 256 series of 1500 positions reversed (46 totals: a top of 64) and of 2200 (68: a top of
// 128, or 2 per invocation where workgroup memory holds fewer slots). Values equal native's. (Sizes
// kept under lavapipe's 128 MiB storage-buffer range.)
TEST(VulkanAssociativeScan, ManySeriesOfLargeElementsScanInWarpWorkgroups) {
  using V = std::vector<Array>;
  const std::int64_t B = 256, w = 32;
  for (std::int64_t n : {1500, 2200}) {
    const bool reverse = n == 1500;
    auto per_series = [reverse](const Array& a, const Array& b) {
      return lax::associative_scan_flat(
          [](const V& x, const V& y) {
            return V{y[0] * x[0], y[0] * x[1] + y[1]};
          },
          {a, b}, reverse, 0);
    };
    auto f = jit(vmap(per_series));
    const Array a = np::reshape(np::cos(np::arange(0, B * n, 1, DType::float32) * 0.37) * 0.1 + 0.95, {B, n, 1});
    const Array b = np::reshape(np::sin(np::arange(0, B * n * w, 1, DType::float32) * 0.11), {B, n, w});
    V want;
    {
      DefaultDeviceScope scope("native");
      const V r = on({a, b}, "native");
      want = f(r[0], r[1]);
    }
    const V in = on({a, b}, "vulkan");
    V got;
    const std::string log = jxt::debug_log_of([&] { got = f(in[0], in[1]); });
    // the level of 32, the top level, the level's fix-up
    EXPECT_NE(log.find("per series (256 series, the unbatched combine): blocked: 3 dispatches (each workgroup "
                       "scans 32 positions"),
              std::string::npos)
        << log;
    // 46 totals: one each for 64 invocations; 68: one each for 128 invocations, or (slots of a
    // smaller workgroup memory: the test profile's 16 KiB hold 64) 2 each for 64
    EXPECT_TRUE(std::regex_search(log, std::regex(n == 1500 ? "the top level 1 per invocation in a workgroup of 64,"
                                                            : "the top level (1 per invocation in a workgroup of "
                                                              "128|2 per invocation in a workgroup of 64),")))
        << log;
    for (std::size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(all_close(got[i], vals(want[i]), 2e-4, 2e-4)) << "n " << n << " leaf " << i;
  }
}

// The same along a scan axis after others: leaves (3, n, 2) scanned along axis 1, vmapped over B
// series (batched leaves (3, B, n, 2) per series); an affine map per position (a, b) composed as
// x then y: (a_y·a_x, a_y·b_x + b_y). Values equal the cpu oracle's.
TEST(VulkanAssociativeScan, VmappedScansAlongALaterAxisRunPerSeries) {
  using V = std::vector<Array>;
  const std::int64_t B = 6, n = 700;
  auto per_series = [](const Array& a, const Array& b) {
    return lax::associative_scan_flat(
        [](const V& x, const V& y) {
          return V{y[0] * x[0], y[0] * x[1] + y[1]};
        },
        {a, b}, false, 1);
  };
  auto f = vmap(per_series);
  const Array a =
      np::reshape(np::cos(np::arange(0, B * 3 * n * 2, 1, DType::float32) * 0.37) * 0.2 + 0.9, {B, 3, n, 2});
  const Array b = np::reshape(np::sin(np::arange(0, B * 3 * n * 2, 1, DType::float32) * 0.11), {B, 3, n, 2});
  V want;
  {
    DefaultDeviceScope scope("cpu");
    const V r = on({a, b}, "cpu");
    want = f(r[0], r[1]);
  }
  const V in = on({a, b}, "vulkan");
  std::vector<std::string> shaders;
  V got;
  {
    trace::Subscription sub([&](const trace::Event& e) {
      if (e.kind == trace::EventKind::compile) shaders.push_back(e.detail);
    });
    got = jit(f)(in[0], in[1]);
  }
  EXPECT_NE(std::find(shaders.begin(), shaders.end(), "associative_scan_series"), shaders.end())
      << fmt::format("{}", fmt::join(shaders, ", "));
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].shape(), (Shape{B, 3, n, 2}));
    EXPECT_TRUE(all_close(got[i], vals(want[i]), 2e-4, 2e-4)) << i;
  }
}

// A leaf no series changes (A and S here, shared) is broadcast, so the scan still runs per series
// (before, "a leaf is not batched" sent it to one combine of whole-batch elements per position);
// the gradient's transposed scan (three leaves per element leaf, kept apart where the budget binds
// 2·9 + 1 buffers: the "device" profile) runs per series too. Values and gradients equal the cpu
// oracle's, and equal them too where the broadcasts would pass JX_SERIES_BROADCAST_MAX.
TEST(VulkanAssociativeScan, SharedLeavesAndTheGradientRunPerSeries) {
  using V = std::vector<Array>;
  const std::int64_t B = 5, n = 300;
  auto [A, b, S] = kelems(static_cast<int>(n), DType::float32);
  Array scale = np::reshape(np::arange(0, B, 1, DType::float32) * 0.1 + 1.0, {B, 1, 1, 1});
  Array bs = np::broadcast_to(b, {B, n, 2, 1}) * scale;  // one b per series
  auto loss = [](const Array& theta, const Array& A, const Array& S, const Array& b) {
    const V out = lax::associative_scan_flat(
        [](const V& x, const V& y) {
          Elem e = kcompose({x[0], x[1], x[2]}, {y[0], y[1], y[2]});
          return V{std::get<0>(e), std::get<1>(e), std::get<2>(e)};
        },
        {A * theta, b, S}, false, 0);
    return np::sum(out[1] * out[1]) + np::sum(out[2]);
  };
  auto per_series = [&](const Array& theta, const Array& A, const Array& S, const Array& b) {
    auto [v, g] = value_and_grad(loss)(theta, A, S, b);
    return V{v, g};
  };
  auto f = vmap(per_series, {std::nullopt, std::nullopt, std::nullopt, 0});
  Array theta = np::array({0.9}, DType::float32);
  V want;
  {
    DefaultDeviceScope scope("cpu");
    const V r = on({theta, A, S, bs}, "cpu");
    want = f(r[0], r[1], r[2], r[3]);
  }
  vulkan::set_limits("device");
  const V in = on({theta, A, S, bs}, "vulkan");
  std::vector<std::string> shaders;
  V got;
  {
    trace::Subscription sub([&](const trace::Event& e) {
      if (e.kind == trace::EventKind::compile) shaders.push_back(e.detail);
    });
    got = jit(f)(in[0], in[1], in[2], in[3]);
  }
  EXPECT_GE(std::count(shaders.begin(), shaders.end(), "associative_scan_series"), 2)
      << fmt::format("{}", fmt::join(shaders, ", "));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].shape(), (Shape{B, 1}));
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(all_close(got[i], vals(want[i]), 2e-4, 2e-4)) << i;
  {  // broadcasts over the bound (1 KiB here, 256 MiB by default): the shared leaves stay shared,
     // and the scans combine whole-batch elements, with the same values
    ScopedEnv small("JX_SERIES_BROADCAST_MAX", "1024");
    clear_caches();
    std::vector<std::string> batched_shaders;
    trace::Subscription sub([&](const trace::Event& e) {
      if (e.kind == trace::EventKind::compile) batched_shaders.push_back(e.detail);
    });
    const V b = jit(f)(in[0], in[1], in[2], in[3]);
    const auto scans = std::count_if(batched_shaders.begin(), batched_shaders.end(),
                                     [](const std::string& d) { return d.rfind("associative_scan", 0) == 0; });
    EXPECT_GE(scans, 2) << fmt::format("{}", fmt::join(batched_shaders, ", "));
    EXPECT_EQ(std::count(batched_shaders.begin(), batched_shaders.end(), "associative_scan_series"), 0)
        << fmt::format("{}", fmt::join(batched_shaders, ", "));
    for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(all_close(b[i], vals(want[i]), 2e-4, 2e-4)) << i;
  }
  clear_caches();
  vulkan::set_limits("webgpu");
}
