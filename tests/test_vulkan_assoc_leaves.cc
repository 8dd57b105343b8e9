// Leaf kernels on vulkan (part of the test_vulkan_scan binary): an elementwise kernel whose output
// only an associative scan reads is computed in the scan's first level (core/jit/scan_leaves.h,
// AssocProgram::leaf_kernels), not written and read back. Values against the cpu oracle and
// against the same program with every leaf a buffer (JX_SCAN_LEAF_KERNELS=0).
#include <fmt/format.h>

#include "core/instrument/instrument.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using namespace jxt;

namespace {
using V = std::vector<Array>;

// affine maps a·v + b per position, composed x then y: (a_y·a_x, a_y·b_x + b_y)
V affine_scan(const Array& a, const Array& b, bool reverse) {
  return lax::associative_scan_flat(
      [](const V& x, const V& y) {
        return V{y[0] * x[0], y[0] * x[1] + y[1]};
      },
      {a, b}, reverse, 0);
}

// leaves made from the inputs by elementwise code (a from x, b from x and y); with `keep_a`, a is
// an output too, so its kernel stays
V leaves_program(const Array& x, const Array& y, bool reverse, bool keep_a) {
  const Array a = np::exp(-(x * x)) * 0.5 + 0.45;
  const Array b = np::sin(y) + x * 0.25;
  V r = affine_scan(a, b, reverse);
  if (keep_a) r.push_back(a);
  return r;
}

struct Ran {
  V got;
  std::string log;
  std::uint64_t dispatches = 0;
};

// f's values on the cpu oracle (the caches cleared after: the vulkan run compiles afresh)
template <class F>
V on_the_oracle(F f, const V& args) {
  V want;
  {
    DefaultDeviceScope scope("cpu");
    const V r = on(args, "cpu");
    want = f(r[0], r[1]);
  }
  clear_caches();
  return want;
}

template <class F>
Ran run_on_vulkan(F f, const V& args) {
  Ran r;
  const V in = on(args, "vulkan");
  auto jf = jit([&](const Array& x, const Array& y) { return f(x, y); });
  r.log = debug_log_of([&] { r.got = jf(in[0], in[1]); });
  r.dispatches = dispatches_of([&] { (void)jf(in[0], in[1]); });
  return r;
}
}  // namespace

// Both leaves computed in the first level from the two inputs (the leaves' kernels are gone: 2
// fewer dispatches a call, kernels not grouped), forward and reversed, over one level (200
// positions) and three (70000). Where a leaf is also an output its kernel stays and only the
// other is computed. Values equal the oracle's and the program's with every leaf a buffer.
TEST(VulkanLeafKernels, LeavesOnlyTheScanReadsAreComputedInItsFirstLevel) {
  ScopedEnv ungrouped("JX_KERNEL_GROUPS", "0");  // a dispatch per kernel
  for (std::int64_t n : {200, 70000}) {
    for (bool reverse : {false, true}) {
      for (bool keep_a : {false, true}) {
        const Array x = np::cos(np::arange(0, n, 1, DType::float32) * 0.37);
        const Array y = np::arange(0, n, 1, DType::float32) * 0.011;
        auto f = [&](const Array& a, const Array& b) { return leaves_program(a, b, reverse, keep_a); };
        const V want = on_the_oracle(f, {x, y});
        const Ran fused = run_on_vulkan(f, {x, y});
        const std::string what = fmt::format("n {} reverse {} keep_a {}", n, reverse, keep_a);
        EXPECT_NE(fused.log.find(keep_a ? "; leaves 1 computed in the first level from 2 operands"
                                        : "; leaves 0, 1 computed in the first level from 2 operands"),
                  std::string::npos)
            << what << "\n"
            << fused.log;
        ASSERT_EQ(fused.got.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(all_close(fused.got[i], vals(want[i]), 2e-4, 2e-4)) << what << " output " << i;
        ScopedEnv off("JX_SCAN_LEAF_KERNELS", "0");
        clear_caches();
        const Ran bound = run_on_vulkan(f, {x, y});
        EXPECT_EQ(bound.log.find("computed in the first level"), std::string::npos) << bound.log;
        EXPECT_EQ(fused.dispatches + (keep_a ? 1 : 2), bound.dispatches) << what;
        for (std::size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(all_close(fused.got[i], vals(bound.got[i]), 1e-6, 1e-6)) << what << " output " << i;
        clear_caches();
      }
    }
  }
}

// A vmapped scan (7 series of 900 positions, run per series) computes its batched leaves in the
// first level the same way; and a scan of one position, whose outputs are its inputs, binds its
// leaves (no level reads them). Values equal the oracle's.
TEST(VulkanLeafKernels, VmappedScansAndOnePositionScans) {
  for (std::int64_t n : {900, 1}) {
    const std::int64_t B = 7;
    const Array x = np::reshape(np::cos(np::arange(0, B * n, 1, DType::float32) * 0.21), {B, n});
    const Array y = np::reshape(np::arange(0, B * n, 1, DType::float32) * 0.003, {B, n});
    auto f = [](const Array& a, const Array& b) {
      return vmap([](const Array& u, const Array& v) { return leaves_program(u, v, false, false); })(a, b);
    };
    const V want = on_the_oracle(f, {x, y});
    const Ran r = run_on_vulkan(f, {x, y});
    if (n > 1) {
      EXPECT_NE(r.log.find("per series (7 series"), std::string::npos) << r.log;
      EXPECT_NE(r.log.find("; leaves 0, 1 computed in the first level from 2 operands"), std::string::npos) << r.log;
    } else {
      EXPECT_EQ(r.log.find("computed in the first level"), std::string::npos) << r.log;
    }
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(all_close(r.got[i], vals(want[i]), 2e-4, 2e-4)) << "n " << n << " output " << i;
    clear_caches();
  }
}

// Results nothing reads after the scan (AssocProgram::unread: here the scan of a, when only b's is
// returned) are not stored by the last fix-up, which then skips their part of the combine; the
// results read equal the oracle's, with the fix-up from the block totals (5000 and 70000
// positions) and with a top level (JX_VK_FIX_TOTALS=0; 70000: three levels, two fix-ups, the
// first storing every result, since the last reads them). The trace's dispatch event of the scan
// names the buffers its widest dispatch binds (consts, the leaves' inputs and outputs, the block
// totals), as the device's counters do.
TEST(VulkanLeafKernels, UnreadResultsAreNotStoredByTheLastFixUp) {
  for (auto [n, totals] : {std::pair<std::int64_t, const char*>{5000, "1"}, {70000, "1"}, {70000, "0"}}) {
    const ScopedEnv fix("JX_VK_FIX_TOTALS", totals);
    for (bool reverse : {false, true}) {
      const Array x = np::cos(np::arange(0, n, 1, DType::float32) * 0.37);
      const Array y = np::arange(0, n, 1, DType::float32) * 0.011;
      auto f = [&](const Array& a, const Array& b) { return V{leaves_program(a, b, reverse, false)[1]}; };
      const V want = on_the_oracle(f, {x, y});
      int traced = 0;
      Ran r;
      {
        trace::Subscription sub([&](const trace::Event& e) {
          if (e.kind == trace::EventKind::dispatch && e.name == "associative_scan") traced = e.buffers;
        });
        vulkan::reset_counters();
        r = run_on_vulkan(f, {x, y});
      }
      const std::string what = fmt::format("n {} reverse {} totals {}", n, reverse, totals);
      EXPECT_NE(r.log.find("; results 0 not stored by the last fix-up"), std::string::npos) << what << "\n" << r.log;
      // gin, 2 leaf inputs, 2 outputs (the kernels' operands where it computes the leaves; the
      // totals); the elementwise kernels bind fewer
      EXPECT_GE(traced, 5) << what;
      EXPECT_EQ(static_cast<std::uint64_t>(traced), vulkan::counters().max_buffers_per_dispatch) << what;
      ASSERT_EQ(r.got.size(), 1u);
      EXPECT_TRUE(all_close(r.got[0], vals(want[0]), 2e-4, 2e-4)) << what;
      clear_caches();
    }
  }
}

// Leaves of other dtypes computed the same way: an int32 count (x > 0.5 converted) summed, a
// float64 leaf (x widened and scaled) scanned by max, and a bool (x < -0.9, packed four to a word
// in memory) scanned by or, over three levels; the three kernels computed in the first level.
// Values equal the oracle's exactly (integer sums, maxima, ors).
TEST(VulkanLeafKernels, IntAndDoubleLeavesAreComputedToo) {
  const std::int64_t n = 70000;
  const Array x = np::cos(np::arange(0, n, 1, DType::float32) * 0.37);
  auto f = [](const Array& a, const Array& unused) {
    (void)unused;
    const Array count = np::astype(np::greater(a, 0.5), DType::int32);
    const Array wide = np::astype(a, DType::float64) * 3.0;
    const Array low = np::less(a, -0.9);
    return lax::associative_scan_flat(
        [](const V& p, const V& q) {
          return V{p[0] + q[0], np::maximum(p[1], q[1]), np::logical_or(p[2], q[2])};
        },
        {count, wide, low}, false, 0);
  };
  const Array y = np::zeros({n}, DType::float32);
  const V want = on_the_oracle(f, {x, y});
  const Ran r = run_on_vulkan(f, {x, y});
  EXPECT_NE(r.log.find("; leaves 0, 1, 2 computed in the first level"), std::string::npos) << r.log;
  ASSERT_EQ(r.got.size(), 3u);
  EXPECT_EQ(r.got[0].dtype(), DType::int32);
  EXPECT_EQ(r.got[1].dtype(), DType::float64);
  EXPECT_EQ(r.got[2].dtype(), DType::bool_);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(r.got[i], vals(want[i]), 0, 0)) << i;
}
