// Associative scans on vulkan (part of the test_vulkan_scan binary): the blocked, cooperative and
// Kogge-Stone forms, their dispatch counts, and values against the interpreter, around every
// level's edge, in every leaf dtype, forward and reverse. Gradients through them:
// test_vulkan_assoc_grad.cc; vmapped scans (many series at once): test_vulkan_assoc_series.cc.
#include <array>

#include <fmt/format.h>

#include "core/backends/vulkan/glsl_scan.h"
#include "core/instrument/instrument.h"
#include "core/jit/program.h"
#include "core/transform/control_internal.h"
#include "tests/kalman_elems.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::dispatches_of;
using jxt::Elem;
using jxt::kcompose;
using jxt::kelems;
using jxt::on;
using jxt::ScopedEnv;
using jxt::vals;

namespace {
// The least l with base^l >= n.
std::int64_t ceil_log(std::int64_t n, std::int64_t base) {
  std::int64_t l = 0;
  for (std::int64_t s = 1; s < n; s *= base) ++l;
  return l;
}
}  // namespace

TEST(VulkanAssociativeScan, KoggeStoneRoundsEagerAndJit) {
  for (DType d : {DType::float32, DType::float64}) {
    for (int n : {1, 2, 100, 400, 1600}) {
      Elem e = kelems(n, d);
      auto [wA, wb, wS] = lax::associative_scan(kcompose, e);
      DefaultDeviceScope vk("vulkan");
      Elem ev{device_put(std::get<0>(e), "vulkan"), device_put(std::get<1>(e), "vulkan"),
              device_put(std::get<2>(e), "vulkan")};
      const double tol = d == DType::float64 ? 1e-10 : 1e-4;
      for (bool jitted : {false, true}) {
        auto run = [&] {
          return jitted ? jit([](const Array& A, const Array& b, const Array& S) {
            auto r = lax::associative_scan(kcompose, Elem{A, b, S});
            return std::vector<Array>{std::get<0>(r), std::get<1>(r), std::get<2>(r)};
          })(std::get<0>(ev), std::get<1>(ev), std::get<2>(ev))
                        : [&] {
                            auto r = lax::associative_scan(kcompose, ev);
                            return std::vector<Array>{std::get<0>(r), std::get<1>(r), std::get<2>(r)};
                          }();
        };
        const std::uint64_t disp = dispatches_of([&] { (void)run(); });
        EXPECT_LE(disp, static_cast<std::uint64_t>(ceil_log(n, 2) + 1)) << "n " << n << " jit " << jitted;
        auto got = run();
        EXPECT_TRUE(all_close(got[0], vals(wA), tol, tol)) << n;
        EXPECT_TRUE(all_close(got[1], vals(wb), tol, tol)) << n;
        EXPECT_TRUE(all_close(got[2], vals(wS), tol, tol)) << n;
      }
    }
  }
}

// Blocked scans: each workgroup scans 256 positions in its memory, levels of stride 256^L go up
// until a level fits one workgroup, then fix-ups come down. A top level of up to 1024 positions
// (these elements: 6 values, so up to 4 in an invocation's registers) is one workgroup of the top
// shader: n = 1000 is one dispatch. Above, up to 1025 blocks of 256 (n ≤ 1025·256), the first
// level and one fix-up that folds the block totals itself (mode 3): n = 70000 (274 blocks),
// 256^2 + 1, 1024·256 + 1 and 1025·256 (1025 blocks, 4 totals an invocation) 2 dispatches;
// n = 1025·256 + 1 (1026 blocks) 3 scans + 2 fix-ups. JX_VK_FIX_TOTALS=0 (the top level instead
// of mode 3) at 70000 (2 scans + 1 fix-up) and 1024·256 + 1 (1024 totals at the top: 2 + 1).
// Sizes around the invocation, block and superblock edges, forward and reverse; an int32 sum
// (exact), an affine composition (not commutative) and a bool or, against the interpreter. An
// element over 16 words takes 128-position workgroups in the WebGPU profile's 16 KiB; one over
// 128 words fits no workgroup: the cooperative form (a workgroup per combine), or Kogge-Stone
// rounds where that is forced (JX_VK_ASSOC=ks).
namespace {
using BlockedRef = std::array<std::vector<double>, 4>;

// The blocked-levels test's reference: one sequential pass on the host (the interpreter's odd/even
// recursion over 262400 positions took minutes under ASan) of its op (sum, affine, or).
BlockedRef sequential_reference(const std::vector<Array>& in, bool reverse) {
  BlockedRef x{vals(in[0]), vals(in[1]), vals(in[2]), vals(in[3])};
  const std::size_t n = x[0].size();
  BlockedRef r = x;
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t i = reverse ? n - 1 - k : k, prev = reverse ? i + 1 : i - 1;  // r[i] = op(r[prev], x[i])
    r[0][i] = r[0][prev] + x[0][i];
    r[1][i] = x[1][i] * r[1][prev];
    r[2][i] = x[1][i] * r[2][prev] + x[2][i];
    r[3][i] = (r[3][prev] != 0 || x[3][i] != 0) ? 1.0 : 0.0;
  }
  return r;
}

// Dispatches of a blocked scan of n positions (256 a workgroup, a top level of up to 1024): scans
// at strides 1, 256, 256² while their level has more than one position and the level below did
// not fit one workgroup, a fix-up for each level but the top; or, with the block totals (mode 3,
// up to 1025 blocks), the first level and the fix-up from its totals.
std::uint64_t blocked_dispatches(std::int64_t n, bool totals) {
  std::uint64_t levels = 0;
  for (std::int64_t s = 1; n / s > 1; s *= 256) {
    ++levels;
    if (n / s <= 1024) break;
  }
  const bool from_totals = totals && n > 1024 && (n + 255) / 256 - 1 <= 1024;
  return from_totals ? 2u : levels + (levels > 0 ? levels - 1 : 0);
}
}  // namespace

TEST(VulkanAssociativeScan, BlockedLevelsMatchTheInterpreter) {
  using V = std::vector<Array>;
  auto op = [](const V& p, const V& q) {
    return V{p[0] + q[0], q[1] * p[1], q[1] * p[2] + q[2], np::logical_or(p[3], q[3])};
  };
  vulkan::set_limits("webgpu");
  for (std::int64_t n : std::vector<std::int64_t>{1, 2, 3, 5, 255, 256, 257, 1000, 1023, 1024, 1025, 2047, 70000, 65537,
                                                  1024 * 256 + 1, 1025 * 256, 1025 * 256 + 1}) {
    for (bool reverse : {false, true}) {
      BlockedRef want;  // checked against the interpreter where n is small
      V in;
      {
        DefaultDeviceScope cpu("cpu");
        Array t = np::arange(0, static_cast<double>(n), 1, DType::float64);
        in = {np::astype(np::sin(t) * 3.5, DType::int32), np::sin(t) * 1e-6 + 1.0, np::cos(t) * 1e-3,
              np::greater(np::sin(t * 0.001), np::full({}, 0.999, DType::float64))};
        want = sequential_reference(in, reverse);
        if (n <= 257) {
          const V interp = lax::associative_scan_flat(op, in, reverse, 0);
          ASSERT_EQ(vals(interp[0]), want[0]) << n << " reverse " << reverse;
          ASSERT_TRUE(all_close(interp[1], want[1], 1e-13, 0)) << n << " reverse " << reverse;
          ASSERT_TRUE(all_close(interp[2], want[2], 1e-10, 1e-13)) << n << " reverse " << reverse;
          ASSERT_EQ(vals(interp[3]), want[3]) << n << " reverse " << reverse;
        }
      }
      DefaultDeviceScope vk("vulkan");
      V ev = on(in, "vulkan");
      // webgpu: 9 bindings are over the budget, the leaves are packed into one buffer; device:
      // each leaf binds its input and output
      for (const char* profile : {"webgpu", "device"})
        for (const bool totals : {true, false}) {
          if (!totals && n != 70000 && n != 1024 * 256 + 1) continue;
          const ScopedEnv fix("JX_VK_FIX_TOTALS", totals ? "1" : "0");
          if (!totals) clear_caches();  // plans are made at compile time
          vulkan::set_limits(profile);
          V got;
          std::uint64_t disp = 0;
          const std::string log = jxt::debug_log_of(
              [&] { disp = dispatches_of([&] { got = lax::associative_scan_flat(op, ev, reverse, 0); }); });
          if (n == 70000 && totals) {  // the plan, made at the first call of each key
            EXPECT_TRUE(reverse || log.find("blocked: 2 dispatches (each workgroup scans 256 positions in its memory, "
                                            "then a fix-up that folds the 273 block totals, 2 per invocation;") !=
                                       std::string::npos)
                << profile << ": " << log;
          }
          const std::string where = fmt::format("{} reverse {} {} totals {}", n, reverse, profile, totals);
          EXPECT_EQ(disp, blocked_dispatches(n, totals)) << where;
          EXPECT_EQ(vals(got[0]), want[0]) << where;
          EXPECT_TRUE(all_close(got[1], want[1], 1e-12, 0)) << where;
          EXPECT_TRUE(all_close(got[2], want[2], 1e-9, 1e-12)) << where;
          EXPECT_EQ(vals(got[3]), want[3]) << where;
          if (!totals) clear_caches();
        }
      vulkan::set_limits("webgpu");
    }
  }
}

// Wider elements: 17 float32 words overflow 256 positions of the profile's workgroup memory, so
// a workgroup scans 128 (n = 1000: the first level and the fix-up from its 8 block totals;
// n = 128² + 1 likewise, 129 blocks); 129 words do not fit even 32 positions: the cooperative form (a GPU's
// choice; forced here, as llvmpipe prefers Kogge-Stone), 4 positions per workgroup in turn
// (scans at strides 1, 4, 16, 64, 256 and fix-ups below the top: 9), or Kogge-Stone rounds (10).
TEST(VulkanAssociativeScan, WiderElementsTakeSmallerBlocksOrAWorkgroupPerCombine) {
  using V = std::vector<Array>;
  vulkan::set_limits("webgpu");
  auto wide = [](const V& p, const V& q) { return V{p[0] + q[0]}; };
  const ScopedEnv chunk("JX_VK_COOP_CHUNK", "4");
  for (auto [n, words, dispatches, form] : {std::tuple{1000, 17, 2u, "auto"}, std::tuple{128 * 128 + 1, 17, 2u, "auto"},
                                            std::tuple{1000, 129, 9u, "coop"}, std::tuple{1000, 129, 10u, "ks"}}) {
    const ScopedEnv forced("JX_VK_ASSOC", form);
    if (std::string(form) == "ks") clear_caches();
    Array x;
    V want;
    {
      DefaultDeviceScope cpu("cpu");
      x = np::reshape(np::sin(np::arange(0, n * words, 1, DType::float32)), {n, words});
      want = lax::associative_scan_flat(wide, {x}, false, 0);
    }
    DefaultDeviceScope vk("vulkan");
    Array xv = device_put(x, "vulkan");
    V got;
    EXPECT_EQ(dispatches_of([&] { got = lax::associative_scan_flat(wide, {xv}, false, 0); }), dispatches)
        << n << " " << words << " " << form;
    EXPECT_TRUE(all_close(got[0], vals(want[0]), 1e-3, 1e-3)) << n << " " << words << " " << form;
  }
}

// The cooperative form's homes: an element of 3000 float32 words keeps the running total in
// workgroup memory (the WebGPU profile's 4096 words) and the right operand and the combine's
// result in the workgroup's slice of global scratch (a buffer barrier between steps); a combine
// whose results are its own operands (first of the left, last of the right: associative) copies
// them aside before the next operands overwrite them. n = 200, 4 positions per workgroup in turn:
// scans at strides 1, 4, 16, 64 and fix-ups of the three lower levels, 7 dispatches. Both forms
// of the shader's main loop: split (a GPU's) and merged (llvmpipe's).
class VulkanCoopLoops : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Both, VulkanCoopLoops, ::testing::Values("split", "merged"));
TEST_P(VulkanCoopLoops, CooperativeFormThroughScratchAndStaging) {
  using V = std::vector<Array>;
  const ScopedEnv chunk("JX_VK_COOP_CHUNK", "4"), forced("JX_VK_ASSOC", "coop"), loops("JX_VK_COOP_LOOPS", GetParam());
  vulkan::set_limits("webgpu");
  auto sum = [](const V& p, const V& q) { return V{p[0] + q[0]}; };
  auto first_last = [](const V& p, const V& q) { return V{p[0], q[1]}; };
  const std::int64_t n = 200;
  V in, want_sum;
  {
    DefaultDeviceScope cpu("cpu");
    in = {np::reshape(np::sin(np::arange(0, n * 3000, 1, DType::float32)), {n, 3000}),
          np::reshape(np::cos(np::arange(0, n * 5, 1, DType::float64)), {n, 5})};
    want_sum = lax::associative_scan_flat(sum, {in[0]}, false, 0);
  }
  DefaultDeviceScope vk("vulkan");
  const V ev = on(in, "vulkan");
  for (bool reverse : {false, true}) {
    V got;
    EXPECT_EQ(dispatches_of([&] { got = lax::associative_scan_flat(sum, {ev[0]}, reverse, 0); }), 7u) << reverse;
    if (!reverse) {
      EXPECT_TRUE(all_close(got[0], vals(want_sum[0]), 1e-4, 1e-4));
    }
    got = lax::associative_scan_flat(first_last, {ev[1], ev[0]}, reverse, 0);
    const std::vector<double> x1 = vals(in[1]), x0 = vals(in[0]), g0 = vals(got[0]), g1 = vals(got[1]);
    const std::size_t first = reverse ? static_cast<std::size_t>(n - 1) : 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      for (std::size_t c = 0; c < 5; ++c) ASSERT_EQ(g0[i * 5 + c], x1[first * 5 + c]) << i << " " << reverse;
      for (std::size_t c = 0; c < 3000; c += 599) ASSERT_EQ(g1[i * 3000 + c], x0[i * 3000 + c]) << i << " " << reverse;
    }
  }
}

// The form of a combine over large elements on a GPU (barriers cheap, 48 KiB of workgroup memory,
// so 64 positions per workgroup of the blocked form): the smoother's element at m = 8, (E, g, L)
// ⊕ (E', g', L') = (E' E, E' g + g', E' L E'ᵀ + L'), 136 words, runs cooperatively whether its
// 8-term products stay reductions or jit unrolls them into elementwise code (launch-bound
// backends; glsl_assoc_scan.cc: heavy); an elementwise combine of the same words stays blocked.
TEST(VulkanAssociativeScan, LargeElementsOfProductsRunCooperatively) {
  using V = std::vector<Array>;
  const std::int64_t m = 8, n = 1000;
  auto smoother = [](const V& a, const V& b) {
    const Array e = np::matmul(b[0], a[0]);
    const Array g = np::einsum("nij,nj->ni", b[0], a[1]) + b[1];
    const Array l = np::matmul(np::matmul(b[0], a[2]), np::swapaxes(b[0], 1, 2)) + b[2];
    return V{e, g, l};
  };
  auto sums = [](const V& a, const V& b) { return V{a[0] + b[0], a[1] * b[1], a[2] - b[2]}; };
  const V in = {np::zeros({n, m, m}), np::zeros({n, m}), np::zeros({n, m, m})};
  vk::ScanLimits lim;  // an H200's
  lim.shared_bytes = 49152;
  lim.max_buffers = 32;
  auto form = [&](const std::function<V(const V&, const V&)>& f, bool unroll, bool products) {
    const ClosedJaxpr cj = make_jaxpr([&](const V& x) { return lax::associative_scan(f, x, true); })(in);
    const Eqn& e = cj.jaxpr.eqns.back();
    EXPECT_EQ(e.prim, Prim::associative_scan);
    LowerOptions o;
    o.unroll_sums = unroll;
    std::vector<AVal> ops;
    for (const Array& a : in) ops.push_back({a.dtype(), a.shape()});
    const AssocProgram ap{lower(assoc_body_jaxpr(e.params), o), e.params.num_consts, 0, true, ops, nullptr, {}, {}, {}};
    EXPECT_EQ(ap.body.unrolled_sums > 0, unroll && products);
    std::string why;
    const auto sh = vk::render_assoc_scan(ap, lim, why);
    if (!sh) return "none: " + why;
    return sh->coop ? std::string("coop") : sh->blocked ? fmt::format("blocked {}", sh->block) : std::string("ks");
  };
  EXPECT_EQ(form(smoother, false, true), "coop");
  EXPECT_EQ(form(smoother, true, true), "coop");
  EXPECT_EQ(form(sums, true, false), "blocked 64");
}

// The cooperative combine's temporaries share words where their lives do not meet (glsl_assoc_coop.cc:
// buffer_lives): affine maps x ↦ M x + v composed with M_b M_a taken through 16 products with a
// cyclic permutation of order 16 (exact), each a 16 × 16 temporary read only by the next. In the WebGPU profile's 4096
// words of workgroup memory every temporary its own words (JX_VK_COOP_REUSE=0) spills them into
// global scratch; shared, they fit workgroup memory with room to spare. Values bit for bit the same,
// and the oracle's.
TEST(VulkanAssociativeScan, CooperativeTemporariesShareWords) {
  using V = std::vector<Array>;
  const std::int64_t m = 16, n = 40;
  auto compose = [](const V& a, const V& b) {
    Array p = np::matmul(b[0], a[0]);
    // Q turns the columns by one: P Q^16 = P exactly, and each product moves every entry (so a
    // temporary sharing words with one still read would show)
    const Array k = lax::iota(DType::int32, {m, m}, 0), j = lax::iota(DType::int32, {m, m}, 1);
    const Array q = np::astype(np::logical_or(np::equal(j - k, 1), np::equal(k - j, m - 1)), p.dtype());
    for (int i = 0; i < 16; ++i) p = np::matmul(p, q);
    return V{p, np::einsum("nij,nj->ni", b[0], a[1]) + b[1]};
  };
  const ScopedEnv chunk("JX_VK_COOP_CHUNK", "4"), forced("JX_VK_ASSOC", "coop");
  vulkan::set_limits("webgpu");
  V in, want;
  {
    DefaultDeviceScope cpu("cpu");
    const Array i = lax::iota(DType::int32, {m, m}, 0), j = lax::iota(DType::int32, {m, m}, 1);
    const Array G = np::eye(m, {}, 0, DType::float32) * 0.9 + np::sin(np::astype(i * 3 + j, DType::float32)) * 0.01;
    in = {np::broadcast_to(G, {n, m, m}) + np::reshape(np::cos(np::arange(0, n, 1, DType::float32)), {n, 1, 1}) * 0.01 *
                                               np::eye(m, {}, 0, DType::float32),
          np::reshape(np::sin(np::arange(0, n * m, 1, DType::float32)), {n, m})};
    want = lax::associative_scan(compose, in);
  }
  const V ev = on(in, "vulkan");
  auto bytes = [](const std::string& log, const std::string& what) {
    const std::size_t at = log.find(" bytes of " + what), sp = log.rfind(' ', at - 1);
    return at == std::string::npos ? std::int64_t{0} : std::stoll(log.substr(sp + 1, at - sp - 1));
  };
  std::array<V, 2> got;
  std::array<std::int64_t, 2> shared{}, scratch{};
  for (int reuse = 0; reuse < 2; ++reuse) {
    const ScopedEnv words("JX_VK_COOP_REUSE", reuse ? "1" : "0");
    clear_caches();  // shaders are rendered at compile time
    // the plan's reason names its workgroup memory and scratch
    const std::string log = jxt::debug_log_of([&] {
      got[reuse] = jit([&](const V& x) { return lax::associative_scan(compose, x); })(ev);
      (void)vals(got[reuse][0]);
    });
    ASSERT_NE(log.find("cooperative"), std::string::npos) << log;
    shared[reuse] = bytes(log, "workgroup memory");
    scratch[reuse] = bytes(log, "scratch");
  }
  EXPECT_GT(scratch[0], 0);
  EXPECT_EQ(scratch[1], 0);
  EXPECT_LT(shared[1] + scratch[1], (shared[0] + scratch[0]) / 2);
  for (std::size_t o = 0; o < want.size(); ++o) {
    EXPECT_EQ(vals(got[1][o]), vals(got[0][o])) << o;
    EXPECT_TRUE(all_close(got[1][o], vals(want[o]), 1e-4, 1e-4)) << o;
  }
}

// The cooperative form binds each leaf's input and output directly where 2k + 1 bindings (k
// leaves; + 1 for scratch) are allowed: the first level reads the inputs and writes every
// position's prefix, the others work in place on the outputs, and no copies pack and unpack the
// leaves (glsl_assoc_coop.cc: LeafBuffers). Kalman elements (3 leaves: 7 bindings of the WebGPU
// profile's 8), each map followed by a constant q of the combine (an argument of the jitted
// function, still packed: one copy), n = 1 (no level: the outputs copied from the inputs), 2, 5,
// 17 and 70 (strides 1, 4, 16, 64 and their fix-ups), both directions: bit for bit the packed
// form's values, and the oracle's; the packed form copies 7 times (q, 3 leaves in, 3 out), the
// direct one once (n = 1: 4).
TEST(VulkanAssociativeScan, CooperativeLeavesBoundDirectly) {
  using V = std::vector<Array>;
  const ScopedEnv chunk("JX_VK_COOP_CHUNK", "4"), forced("JX_VK_ASSOC", "coop");
  vulkan::set_limits("webgpu");
  auto scan = [](const V& x, bool reverse) {
    const Array q = x[3];
    auto f = [q](const V& a, const V& b) {  // b's map after q: still associative
      auto [A, c, S] = kcompose({a[0], a[1], a[2]}, {np::matmul(b[0], q), b[1], b[2]});
      return V{A, c, S};
    };
    return lax::associative_scan(f, V{x[0], x[1], x[2]}, reverse);
  };
  for (std::int64_t n : {1, 2, 5, 17, 70}) {
    V in, want[2];
    {
      DefaultDeviceScope cpu("cpu");
      const auto [A, b, S] = kelems(static_cast<int>(n), DType::float32);
      in = {A, b, S, np::eye(2, {}, 0, DType::float32) * 0.98 + np::eye(2, {}, 1, DType::float32) * 0.01};
      for (int r = 0; r < 2; ++r) want[r] = scan(in, r == 1);
    }
    DefaultDeviceScope vk("vulkan");
    const V ev = on(in, "vulkan");
    for (bool reverse : {false, true}) {
      std::array<V, 2> got;
      for (int direct = 0; direct < 2; ++direct) {
        const ScopedEnv bind("JX_VK_COOP_DIRECT", direct ? "1" : "0");
        clear_caches();
        vulkan::synchronize();
        vulkan::reset_counters();
        const std::string log = jxt::debug_log_of([&] {
          got[direct] = jit([&](const V& x) { return scan(x, reverse); })(ev);
          vulkan::synchronize();
        });
        const std::string where = fmt::format("n {} reverse {} direct {}", n, reverse, direct);
        if (n > 1) {
          EXPECT_NE(log.find(direct ? "leaves bound directly" : "leaves packed into one buffer"), std::string::npos)
              << where << "\n"
              << log;
        }
        EXPECT_EQ(vulkan::counters().copies, direct ? (n == 1 ? 4u : 1u) : 7u) << where;
        for (std::size_t o = 0; o < 3; ++o)
          EXPECT_TRUE(all_close(got[direct][o], vals(want[reverse][o]), 1e-5, 1e-5)) << where << " leaf " << o;
      }
      for (std::size_t o = 0; o < 3; ++o)
        EXPECT_EQ(vals(got[1][o]), vals(got[0][o])) << n << " " << reverse << " " << o;
    }
  }
}

namespace {
using V6 = std::vector<Array>;
using EveryRef = std::array<std::vector<double>, 6>;

// The every-dtype test's op and its sequential reference, r[i] = op(r[prev], x[i]).
V6 every_dtype_op(const V6& p, const V6& q) {
  return V6{p[0] + q[0], p[1] + q[1], q[2] * p[2], q[2] * p[3] + q[3], np::logical_or(p[4], q[4]), p[5] + q[5]};
}
EveryRef every_dtype_reference(const V6& in, bool reverse) {
  EveryRef x{vals(in[0]), vals(in[1]), vals(in[2]), vals(in[3]), vals(in[4]), vals(in[5])};
  EveryRef r = x;
  const std::int64_t n = static_cast<std::int64_t>(x[0].size()), pad = in[5].shape()[1];
  for (std::int64_t k = 1; k < n; ++k) {
    const std::size_t i = static_cast<std::size_t>(reverse ? n - 1 - k : k), prev = reverse ? i + 1 : i - 1;
    r[0][i] = r[0][prev] + x[0][i];
    r[1][i] = r[1][prev] + x[1][i];
    r[2][i] = x[2][i] * r[2][prev];
    r[3][i] = x[2][i] * r[3][prev] + x[3][i];
    r[4][i] = (r[4][prev] != 0 || x[4][i] != 0) ? 1.0 : 0.0;
    for (std::int64_t c = 0; c < pad; ++c) r[5][i * pad + c] = r[5][prev * pad + c] + x[5][i * pad + c];
  }
  return r;
}
V6 every_dtype_inputs(std::int64_t n, std::int64_t pad) {
  DefaultDeviceScope cpu("cpu");
  Array t = np::arange(0, static_cast<double>(n), 1, DType::float64);
  Array small = np::astype(np::astype(np::sin(t) * 3.5, DType::int32), DType::float64);  // -3 .. 3
  return V6{np::astype(small, DType::int32),
            np::astype(small, DType::float32),
            np::sin(t * 0.7) * 1e-6 + 1.0,
            np::cos(t) * 1e-3,
            np::greater(np::sin(t * 0.001), np::full({}, 0.999, DType::float64)),
            np::reshape(np::cos(np::arange(0, static_cast<double>(n * pad), 1, DType::float64)), {n, pad})};
}
void expect_every_dtype(const V6& got, const EveryRef& want, const std::string& where) {
  EXPECT_EQ(vals(got[0]), want[0]) << where;
  EXPECT_EQ(vals(got[1]), want[1]) << where;
  EXPECT_TRUE(all_close(got[2], want[2], 1e-12, 0)) << where;
  EXPECT_TRUE(all_close(got[3], want[3], 1e-9, 1e-12)) << where;
  EXPECT_EQ(vals(got[4]), want[4]) << where;
  EXPECT_TRUE(all_close(got[5], want[5], 1e-9, 1e-9)) << where;
}
// The sizes around B's edges: B = 128 and 64 (4 positions per invocation at the top level: slow
// compiles on llvmpipe) at the edges themselves; B = 256 and 32 at every size; B = 0 (no blocked
// form) a few.
std::vector<std::int64_t> edge_sizes(std::int64_t B) {
  std::vector<std::int64_t> sizes{2};
  if (B == 0)
    sizes.insert(sizes.end(), {1, 3, 64, 65, 257, 1000});
  else if (B == 256 || B == 32)
    sizes.insert(sizes.end(), {1, 3, B - 1, B, B + 1, 2 * B + 1, 4 * B + 1, B * B - 1, B * B + 1, 4 * B * B + 1});
  else
    sizes.insert(sizes.end(), {B - 1, B + 1, 4 * B + 1, B * B + 1});
  if (B == 32) sizes.push_back(B * B * B + 1);
  return sizes;
}
// The path shows in the dispatches: ceil(log2 n) Kogge-Stone rounds, at most 2L - 1 blocked
// dispatches for L = ceil(log_B n) levels (cooperative: 4 positions per workgroup, B = 4).
void expect_path_dispatches(std::uint64_t disp, std::int64_t n, std::int64_t B, const std::string& form,
                            const std::string& profile, const std::string& where) {
  auto most = [&](std::int64_t base) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(2 * ceil_log(n, base) - 1, 0));
  };
  if (profile == "webgpu" && B == 0 && form == "ks") {
    EXPECT_EQ(disp, static_cast<std::uint64_t>(ceil_log(n, 2))) << where;
  }
  if (B == 0 && form == "coop") {
    EXPECT_LE(disp, most(4)) << where;
  }
  if (profile == "webgpu" && B > 0) {
    EXPECT_LE(disp, most(B)) << where;
  }
}
}  // namespace

// Every associative-scan path with every leaf dtype in one element, around every level's edge
// (issue 27: the blocked shader put a float64 leaf of slot s at word 2·s·W instead of s·W, past
// the end of workgroup memory from slot B/2 on; llvmpipe's slack after the array hid it, the
// H100 dropped the writes). A position holds an int32 sum, a float32 sum of small integers, a
// float64 product, a float64 affine x·p + q, a bool or, and p float64 words of padding (a sum)
// that set how many positions fit the webgpu profile's 16 KiB: p = 0, 8, 20, 40 give B = 256,
// 128, 64, 32 per workgroup (7 + 2p words); p = 64 fits no 32: Kogge-Stone rounds. Sizes:
// B - 1, B, B + 1 (the first fix-up), 2B + 1 and 4B + 1 (the top level, several positions per
// invocation), B² ± 1 (a second level and its fix-up), 4B² + 1 and B³ + 1 (B = 32); both
// directions, eager and jit; the device profile (each leaf bound directly where 13 bindings
// are allowed) at the fix-up edges. The slowest to compile on llvmpipe (B = 128, 64) take the
// edges alone: 30-60 s cold there, ~10 s with mesa's shader cache. The path shows in the dispatches: ceil(log2 n) Kogge-Stone
// rounds, at most 2L - 1 blocked dispatches for L = ceil(log_B n) levels. llvmpipe
// bounds-checks workgroup memory, so an addressing error reads NaN there and fails in CI.
TEST(VulkanAssociativeScan, EveryPathEveryDtypeAroundEveryLevelEdge) {
  const ScopedEnv chunk("JX_VK_COOP_CHUNK", "4");
  if (!std::getenv("JX_VK_CHECK_SHARED")) {
    EXPECT_EQ(vulkan::checked_shared(), backend("vulkan").info().device.find("llvmpipe") != std::string::npos)
        << "workgroup memory is bounds-checked on llvmpipe, and only there";
  }
  auto jitted =
      jit([](const V6& x, bool reverse) { return lax::associative_scan_flat(every_dtype_op, x, reverse, 0); });
  for (auto [pad, B] : {std::pair<std::int64_t, std::int64_t>{0, 256}, {8, 128}, {20, 64}, {40, 32}, {64, 0}}) {
    const bool full = B == 256 || B == 32;
    // p = 64: the cooperative form, then Kogge-Stone rounds (both forced); plans are made at
    // compile time, so the caches are cleared where the form changes
    const std::vector<std::string> forms =
        B == 0 ? std::vector<std::string>{"coop", "ks"} : std::vector<std::string>{"auto"};
    for (const std::string& form : forms) {
      const ScopedEnv forced("JX_VK_ASSOC", form.c_str());
      if (form == "ks") clear_caches();
      for (std::int64_t n : edge_sizes(B)) {
        const V6 in = every_dtype_inputs(n, pad);
        DefaultDeviceScope vk("vulkan");
        const V6 ev = on(in, "vulkan");
        for (bool reverse : {false, true}) {
          const EveryRef want = every_dtype_reference(in, reverse);
          const bool edge = n == B + 1 || (full && (n == 4 * B + 1 || n == B * B + 1)) || (B == 0 && n == 257);
          for (const std::string profile : {"webgpu", "device"}) {
            if (profile == "device" && !edge) continue;
            vulkan::set_limits(profile);
            for (bool use_jit : {false, true}) {
              const std::string where = fmt::format("pad {} n {} reverse {} {} {} {}", pad, n, reverse, profile,
                                                    use_jit ? "jit" : "eager", form);
              vulkan::synchronize();
              vulkan::reset_counters();
              const V6 got = use_jit ? jitted(ev, reverse) : lax::associative_scan_flat(every_dtype_op, ev, reverse, 0);
              vulkan::synchronize();
              expect_path_dispatches(vulkan::counters().dispatches, n, B, form, profile, where);
              expect_every_dtype(got, want, where);
            }
          }
          vulkan::set_limits("webgpu");
        }
      }
    }
  }
}

TEST(VulkanAssociativeScan, ReverseAxisBoolsAndTheTripleLoss) {
  Array x = np::reshape(np::arange(0, 60, 1, DType::float64), {3, 20});
  auto add = [](const std::vector<Array>& a, const std::vector<Array>& b) {
    return std::vector<Array>{a[0] + b[0], np::logical_or(a[1], b[1])};
  };
  Array flags = np::greater(np::sin(x), np::full({}, 0.9, DType::float64));
  auto want = lax::associative_scan_flat(add, {x, flags}, true, 1);
  DefaultDeviceScope vk("vulkan");
  auto got = lax::associative_scan_flat(add, on({x, flags}, "vulkan"), true, 1);
  EXPECT_TRUE(all_close(got[0], vals(want[0]), 1e-12, 1e-12));
  EXPECT_EQ(vals(got[1]), vals(want[1]));
  // the documented 3-tuple loss: jit(value_and_grad) on the webgpu profile
  auto loss = [](const Array& theta) {
    Array e = np::exp(theta) * np::ones({20}, theta.dtype());
    auto [a, b, c] = lax::associative_scan(
        [](const Elem& p, const Elem& q) {
          const auto& [a0, b0, c0] = p;
          const auto& [a1, b1, c1] = q;
          return Elem{a1 * a0, a1 * b0 + b1, a1 * c0 + c1};
        },
        Elem{e, e, np::ones({20}, theta.dtype())});
    return np::sum(a + b + c);
  };
  vulkan::set_limits("webgpu");
  vulkan::reset_counters();
  Array th = device_put(np::array({0.5}, DType::float64), "vulkan");
  EXPECT_NEAR(jit(loss)(th).item<double>(), 284451.7727, 1e-3);
  auto [v, g] = jit(value_and_grad(loss))(th);
  EXPECT_NEAR(v.item<double>(), 284451.7727, 1e-3);
  EXPECT_NEAR(g.item<double>(), 4813870.52, 1e-2);
  EXPECT_LE(vulkan::counters().max_buffers_per_dispatch, 8u);
}
