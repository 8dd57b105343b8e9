// Small dense linear algebra inside scans on vulkan (core/backends/vulkan/glsl_linalg.cc):
// cholesky, triangular_solve (every flag), lu and inv through them, inlined into fused scan
// bodies and associative-scan combines — no host routine, no per-step recording, no odd/even
// recursion — with values against the cpu oracle at n ∈ {1, 2, 3, 5, 13, 16}, both dtypes; and at
// top level, batches of matrices as one shader.
// Registered twice in ctest like test_vulkan (plain and under the validation layer).
#include <array>
#include <cmath>
#include <optional>

#include "core/instrument/instrument.h"
#include "scanpath/scan_path_tracker.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::on;
using jxt::vals;

namespace {
using AP = std::pair<Array, Array>;

// A well-conditioned SPD matrix of size n: I·n + a smooth symmetric part.
Array spd(std::int64_t n, DType d) {
  Array i = np::astype(lax::iota(DType::int32, {n, n}, 0), d), j = np::astype(lax::iota(DType::int32, {n, n}, 1), d);
  return np::eye(n, {}, 0, d) * static_cast<double>(n + 1) + np::cos(i - j) * 0.5;
}
// A general (non-symmetric) matrix whose pivots need row exchanges.
Array general(std::int64_t n, DType d) {
  Array i = np::astype(lax::iota(DType::int32, {n, n}, 0), d), j = np::astype(lax::iota(DType::int32, {n, n}, 1), d);
  return np::sin(i * 1.7 + j * 0.3) + np::eye(n, {}, 0, d) * 0.1 + np::astype(np::equal(i + 1.0, j), d) * 3.0;
}

struct Counts {
  vulkan::Counters k;
  std::string path;
};

// Runs f on vulkan twice (the first compiles) and returns the second call's counters and the
// last scan path it took.
template <class F>
Counts counted(F&& f) {
  std::optional<ScanPathTracker> t;
  const vulkan::Counters k = jxt::second_call_counters([&] {
    t.emplace();
    f();
  });
  return {k, t->choices().empty() ? "" : std::string(scan_path_name(t->choices().back().path))};
}

double tol_of(DType d) { return d == DType::float64 ? 1e-10 : 2e-4; }

}  // namespace

// Each routine in a scan body: the body stays one fused shader and matches the oracle.
TEST(VulkanLinalg, ScanBodiesWithEveryRoutineAreFused) {
  for (DType d : {DType::float32, DType::float64}) {
    for (std::int64_t n : {1, 2, 3, 5, 13, 16}) {
      const Array A = spd(n, d), B = general(n, d);
      // carry c [n,n]; xs [4]: each step factors c·x + A, solves against B, inverts B
      auto body = [&](const Array& c, const Array& x) {
        Array L = np::linalg::cholesky(A + c * x * 0.01);
        Array X = np::linalg::triangular_solve(L, B, {.left_side = true, .lower = true});
        Array Y = np::linalg::triangular_solve(
            L, B, {.left_side = false, .lower = true, .transpose_a = true, .unit_diagonal = true});
        Array Z = np::linalg::solve(B + c * 0.001, X + Y);
        return AP{np::tanh(Z * 0.1), np::sum(L) + np::sum(np::linalg::inv(B))};
      };
      auto run = [&](const Array& c0, const Array& xs) { return lax::scan(body, c0, xs); };
      const Array c0 = np::eye(n, {}, 0, d), xs = np::arange(1, 5, 1, d);
      auto [wc, wy] = run(c0, xs);
      auto v = on({c0, xs}, "vulkan");
      auto jr = jit(run);
      const Counts k = counted([&] { (void)jr(v[0], v[1]); });
      EXPECT_EQ(k.path, "fused") << "n " << n;
      EXPECT_EQ(k.k.host_routines, 0u) << "n " << n;
      EXPECT_LE(k.k.dispatches, 4u) << "n " << n;
      auto [c, y] = jr(v[0], v[1]);
      const double tol = tol_of(d) * (d == DType::float32 ? static_cast<double>(n) : 1.0);
      EXPECT_TRUE(all_close(c, vals(wc), tol, tol)) << dtype_name(d) << " n " << n;
      EXPECT_TRUE(all_close(y, vals(wy), tol, tol)) << dtype_name(d) << " n " << n;
    }
  }
}

// lu's three outputs (packed factors, permutation, det P) from a scan body, on matrices whose
// pivots need row exchanges: the same as the oracle, bit for bit on the permutation.
TEST(VulkanLinalg, LuOutputsFromAFusedBody) {
  for (DType d : {DType::float32, DType::float64}) {
    for (std::int64_t n : {1, 3, 8}) {
      const Array B = general(n, d);
      auto run = [&](const Array& c0, const Array& xs) {
        return lax::scan(
            [&](const Array& c, const Array& x) {
              auto [f, p, s] = lax::lu(B * x + c);
              return AP{c + 1.0,
                        np::concatenate({np::reshape(f, {n * n}), np::reshape(p, {n * n}), np::reshape(s, {1})})};
            },
            c0, xs);
      };
      const Array c0 = np::zeros({n, n}, d), xs = np::array({1.0, -2.0, 0.5}, d);
      auto [wc, wy] = run(c0, xs);
      auto v = on({c0, xs}, "vulkan");
      auto jr = jit(run);
      const Counts k = counted([&] { (void)jr(v[0], v[1]); });
      EXPECT_EQ(k.path, "fused") << "n " << n;
      EXPECT_EQ(k.k.host_routines, 0u) << "n " << n;
      auto [c, y] = jr(v[0], v[1]);
      EXPECT_TRUE(all_close(y, vals(wy), tol_of(d), tol_of(d))) << dtype_name(d) << " n " << n;
    }
  }
}

// The DLM combine at m > 2: inv inside an associative-scan combine. Every path (blocked where
// elements fit, else cooperative on a GPU and Kogge-Stone on llvmpipe; the cooperative form also
// forced, its LUs run by the whole workgroup) keeps the scan on the device: no host routine, and
// at most 12 dispatches. The cooperative form also on matrices with their rows reversed, whose
// LUs exchange rows at every other pivot.
TEST(VulkanLinalg, InverseInAnAssociativeCombineStaysOnTheDevice) {
  using E = std::vector<Array>;
  // (M, v) is the map x ↦ M⁻¹ x + v; a then b: (M_a M_b, M_b⁻¹ v_a + v_b)
  auto compose = [](const E& a, const E& b) {
    return E{np::matmul(a[0], b[0]), np::einsum("nij,nj->ni", np::linalg::inv(b[0]), a[1]) + b[1]};
  };
  for (DType d : {DType::float32, DType::float64}) {
    for (std::int64_t m : {3, 13}) {
      for (const std::string form : {"auto", "coop", "coop-pivots"}) {
        const bool pivots = form == "coop-pivots";
        const jxt::ScopedEnv forced("JX_VK_ASSOC", pivots ? "coop" : form.c_str());
        clear_caches();  // plans are made at compile time
        for (std::int64_t n : {7, 300}) {
          const Array G = np::eye(m, {}, 0, d) + general(m, d) * (0.005 / static_cast<double>(m));
          Array Ms = np::broadcast_to(G, {n, m, m}) +
                     np::reshape(np::sin(np::arange(0, n, 1, d)), {n, 1, 1}) * 0.01 * np::eye(m, {}, 0, d);
          if (pivots) {
            const Array i = lax::iota(DType::int32, {m, m}, 0), j = lax::iota(DType::int32, {m, m}, 1);
            Ms = np::einsum("ij,njk->nik", np::astype(np::equal(i + j, m - 1), d), Ms);  // rows reversed
          }
          Array vs = np::cos(np::reshape(np::arange(0, n * m, 1, d), {n, m}));
          const E want = lax::associative_scan(compose, E{Ms, vs});
          auto v = on({Ms, vs}, "vulkan");
          auto js = jit([&](const Array& a, const Array& b) { return lax::associative_scan(compose, E{a, b}); });
          std::uint64_t disp = 0;
          for (int rep = 0; rep < 2; ++rep) {
            const Counts k = counted([&] { (void)js(v[0], v[1]); });
            EXPECT_EQ(k.k.host_routines, 0u) << "m " << m << " n " << n << " " << form;
            disp = k.k.dispatches;
          }
          EXPECT_LE(disp, 12u) << "m " << m << " n " << n << " " << form;
          const E got = js(v[0], v[1]);
          const double tol = d == DType::float64 ? 1e-9 : 2e-3;
          EXPECT_TRUE(all_close(got[0], vals(want[0]), tol, tol))
              << dtype_name(d) << " m " << m << " n " << n << " " << form;
          EXPECT_TRUE(all_close(got[1], vals(want[1]), tol, tol))
              << dtype_name(d) << " m " << m << " n " << n << " " << form;
        }
      }
    }
  }
}

// np.linalg.inv's permutation folded into its solves (glsl_workgroup.cc: PermFolds): in the
// cooperative combine the LU keeps its pivots in registers and writes no P, no transpose of P runs,
// and the unit-lower solve reads Pᵀ from the pivots: two barriers fewer between the combine's
// steps, and the unfolded form's values bit for bit (JX_VK_FOLD_PERM=0), on matrices whose LUs
// exchange rows at every pivot; so do the LU's two forms (entries in registers, or the whole
// matrix through workgroup memory at each pivot: JX_VK_WG_LU_REGS=0).
TEST(VulkanLinalg, InversePermutationFoldsIntoItsSolves) {
  using E = std::vector<Array>;
  auto compose = [](const E& a, const E& b) {
    return E{np::matmul(a[0], b[0]), np::einsum("nij,nj->ni", np::linalg::inv(b[0]), a[1]) + b[1]};
  };
  const jxt::ScopedEnv forced("JX_VK_ASSOC", "coop");
  auto barriers = [](const std::string& details) {
    const std::string key = " barriers between its steps";
    const std::size_t at = details.find(key), open = details.rfind('(', at);
    return at == std::string::npos || open == std::string::npos ? -1
                                                                : std::stoi(details.substr(open + 1, at - open - 1));
  };
  for (DType d : {DType::float32, DType::float64}) {
    for (std::int64_t m : {5, 13}) {
      const std::int64_t n = 40;
      const Array G = np::eye(m, {}, 0, d) + general(m, d) * (0.005 / static_cast<double>(m));
      const Array i = lax::iota(DType::int32, {m, m}, 0), j = lax::iota(DType::int32, {m, m}, 1);
      // rows turned by one (row r is row r + 1 mod m): pivots that are no involution, so Pᵀ ≠ P
      const Array turn = np::logical_or(np::equal(j - i, 1), np::equal(i - j, m - 1));
      const Array Ms =
          np::einsum("ij,njk->nik", np::astype(turn, d),
                     np::broadcast_to(G, {n, m, m}) +
                         np::reshape(np::sin(np::arange(0, n, 1, d)), {n, 1, 1}) * 0.01 * np::eye(m, {}, 0, d));
      const Array vs = np::cos(np::reshape(np::arange(0, n * m, 1, d), {n, m}));
      const E want = lax::associative_scan(compose, E{Ms, vs});
      auto v = on({Ms, vs}, "vulkan");
      std::array<E, 3> got;  // unfolded, folded, folded with the LU's ping-pong form
      std::array<int, 3> bars{};
      for (int folded = 0; folded < 3; ++folded) {
        const jxt::ScopedEnv fold("JX_VK_FOLD_PERM", folded ? "1" : "0");
        const jxt::ScopedEnv regs("JX_VK_WG_LU_REGS", folded == 2 ? "0" : "1");
        clear_caches();  // shaders are rendered at compile time
        auto js = jit([&](const Array& a, const Array& b) { return lax::associative_scan(compose, E{a, b}); });
        // the plan's reason, logged at compile time: "associative_scan on vulkan: ... cooperative: ..."
        const std::string log = jxt::debug_log_of([&] {
          got[folded] = js(v[0], v[1]);
          (void)vals(got[folded][0]);
        });
        EXPECT_NE(log.find("associative_scan on vulkan: "), std::string::npos) << log;
        bars[folded] = barriers(log);
      }
      const std::string at = std::string(dtype_name(d)) + " m " + std::to_string(m);
      EXPECT_GE(bars[0], 3) << at;
      EXPECT_EQ(bars[0] - bars[1], 2) << at;
      const double tol = d == DType::float64 ? 1e-9 : 2e-3;
      for (std::size_t o = 0; o < want.size(); ++o) {
        EXPECT_EQ(vals(got[1][o]), vals(got[0][o])) << at << " output " << o;
        EXPECT_EQ(vals(got[2][o]), vals(got[0][o])) << at << " output " << o;
        EXPECT_TRUE(all_close(got[1][o], vals(want[o]), tol, tol)) << at << " output " << o;
      }
    }
  }
}

// Two independent inverses of one size in a combine: the cooperative form factors their LUs at
// once, the workgroup split between them (one matrix exchanging rows at every other pivot, the
// other at none), each part's permutation and factors its own.
TEST(VulkanLinalg, TwoInversesInACooperativeCombineFactorTogether) {
  using E = std::vector<Array>;
  // two maps x ↦ M⁻¹ x + v and x ↦ N⁻¹ x + w composed side by side
  auto compose = [](const E& a, const E& b) {
    auto mv = [](const Array& A, const Array& x) { return np::einsum("nij,nj->ni", A, x); };
    return E{np::matmul(a[0], b[0]), mv(np::linalg::inv(b[0]), a[1]) + b[1], np::matmul(a[2], b[2]),
             mv(np::linalg::inv(b[2]), a[3]) + b[3]};
  };
  const jxt::ScopedEnv forced("JX_VK_ASSOC", "coop");
  // m = 6, 7: an even and an odd number of pivots (the buffers used in turn). The workgroup takes an
  // invocation per entry of the two lus (2m², in whole warps: 96 and 128), or with
  // JX_VK_COOP_WG_LUS=0 per entry of the widest buffer (m²: 64, two parts of 32)
  for (auto [d, m] : {std::pair{DType::float32, std::int64_t{6}}, std::pair{DType::float64, std::int64_t{7}}})
    for (const char* lus : {"1", "0"}) {
      const jxt::ScopedEnv wg("JX_VK_COOP_WG_LUS", lus);
      clear_caches();             // plans are made at compile time
      const std::int64_t n = 40;  // 4 positions per workgroup in turn: three levels and their fix-ups
      const Array G = np::eye(m, {}, 0, d) + general(m, d) * (0.005 / static_cast<double>(m));
      const Array Ms = np::broadcast_to(G, {n, m, m}) +
                       np::reshape(np::sin(np::arange(0, n, 1, d)), {n, 1, 1}) * 0.01 * np::eye(m, {}, 0, d);
      const Array i = lax::iota(DType::int32, {m, m}, 0), j = lax::iota(DType::int32, {m, m}, 1);
      const Array Ns = np::einsum("ij,njk->nik", np::astype(np::equal(i + j, m - 1), d), Ms);  // rows reversed
      const Array vs = np::cos(np::reshape(np::arange(0, n * m, 1, d), {n, m}));
      const E in{Ms, vs, Ns, vs * 0.5};
      const E want = lax::associative_scan(compose, in);
      auto v = on(in, "vulkan");
      auto js = jit([&](const E& x) { return lax::associative_scan(compose, x); });
      const std::string log = jxt::debug_log_of([&] { (void)vals(js(v)[0]); });
      const std::int64_t want_wg = *lus == '1' ? (2 * m * m + 31) / 32 * 32 : 64;
      EXPECT_NE(log.find(fmt::format("a workgroup of {} invocations per combine", want_wg)), std::string::npos)
          << "m " << m << " JX_VK_COOP_WG_LUS=" << lus << "\n"
          << log;
      const Counts k = counted([&] { (void)js(v); });
      EXPECT_EQ(k.k.host_routines, 0u) << "m " << m;
      const E got = js(v);
      const double tol = d == DType::float64 ? 1e-9 : 2e-3;
      for (std::size_t o = 0; o < want.size(); ++o)
        EXPECT_TRUE(all_close(got[o], vals(want[o]), tol, tol))
            << dtype_name(d) << " m " << m << " output " << o << " JX_VK_COOP_WG_LUS=" << lus;
    }
}

// Where the oracle raises (a matrix that is not positive definite), the shader cannot: inside a
// fused scan cholesky gives NaN, as JAX does on a GPU. A single matrix at top level runs the
// oracle's routine, so the error stays the oracle's.
TEST(VulkanLinalg, NotPositiveDefiniteIsNanInsideAScanAndAnErrorOutside) {
  const Array bad = np::array({{1.0, 2.0}, {2.0, 1.0}}, DType::float32);
  auto run = [&](const Array& c0, const Array& xs) {
    return lax::scan([&](const Array& c, const Array& x) { return AP{c, np::linalg::cholesky(bad * x)}; }, c0, xs);
  };
  auto v = on({np::zeros({1}, DType::float32), np::ones({2}, DType::float32)}, "vulkan");
  auto [c, y] = jit(run)(v[0], v[1]);
  const std::vector<double> got = vals(y);
  EXPECT_EQ(got[0], 1.0);
  EXPECT_TRUE(std::isnan(got[3])) << got[3];
  EXPECT_TRUE(jxt::throws_with<LinAlgError>([&] { (void)np::linalg::cholesky(device_put(bad, "vulkan")); },
                                            {"cholesky: matrix is not positive definite"}));
}

// Top level: a batch of matrices is one shader (an invocation per matrix, no host routine); a
// single matrix runs the oracle's routine on the host. Values against the cpu oracle, every flag.
TEST(VulkanLinalg, TopLevelBatchesRunOnTheDevice) {
  for (DType d : {DType::float32, DType::float64}) {
    // 13: float32 lu unrolled in registers, float64 in global memory; 16: float32 lu by index in
    // the invocation's own array (glsl_linalg.cc: lu_private_code)
    for (std::int64_t n : {2, 5, 13, 16}) {
      const std::int64_t B = 37;
      Array scale = np::reshape(np::arange(1, B + 1, 1, d), {B, 1, 1}) * 0.01;
      Array A = np::broadcast_to(spd(n, d), {B, n, n}) + scale * np::eye(n, {}, 0, d);
      Array G = np::broadcast_to(general(n, d), {B, n, n}) + scale * np::eye(n, {}, 0, d);
      Array R = np::broadcast_to(np::reshape(np::cos(np::arange(0, n * 3, 1, d)), {n, 3}), {B, n, 3});
      auto all = [&](const Array& a, const Array& g, const Array& r) {
        Array L = np::linalg::cholesky(a);
        std::vector<Array> out{L, np::linalg::inv(g)};
        for (bool left : {true, false})
          for (bool lower : {true, false})
            for (bool trans : {false, true}) {
              Array rhs = left ? r : np::swapaxes(r, -1, -2);
              out.push_back(np::linalg::triangular_solve(
                  L + np::swapaxes(L, -1, -2), rhs,
                  {.left_side = left, .lower = lower, .transpose_a = trans, .unit_diagonal = !lower}));
            }
        auto [f, p, s] = lax::lu(g);
        out.push_back(f);
        out.push_back(p);
        out.push_back(s);
        return out;
      };
      const std::vector<Array> want = all(A, G, R);
      auto v = on({A, G, R}, "vulkan");
      DefaultDeviceScope vk("vulkan");  // inv's identity on the device too
      for (bool jitted : {false, true}) {
        std::vector<Array> got;
        const Counts k = counted([&] { got = jitted ? jit(all)(v[0], v[1], v[2]) : all(v[0], v[1], v[2]); });
        EXPECT_EQ(k.k.host_routines, 0u) << dtype_name(d) << " n " << n << " jit " << jitted;
        const double tol = d == DType::float64 ? 1e-10 : 1e-4 * static_cast<double>(n);
        for (std::size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(all_close(got[i], vals(want[i]), tol, tol)) << dtype_name(d) << " n " << n << " output " << i;
      }
    }
  }
  // one matrix: the host routine
  auto one = on({spd(3, DType::float32)}, "vulkan");
  const Counts k = counted([&] { (void)np::linalg::cholesky(one[0]); });
  EXPECT_EQ(k.k.host_routines, 1u);
  // a batch with a matrix that is not positive definite: NaN in that matrix, the others exact
  Array bad = np::stack({spd(2, DType::float32), np::array({{1.0, 2.0}, {2.0, 1.0}}, DType::float32)});
  const std::vector<double> got = vals(np::linalg::cholesky(device_put(bad, "vulkan")));
  EXPECT_FALSE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[7])) << got[7];
}

// A top-level lu with an invocation per row (glsl_linalg.cc: lu_rows_code) against the invocation
// per matrix (JX_VK_LU_ROWS=0) and the oracle, on matrices of small integers: ties between
// candidate pivots (the oracle takes the first largest), zero pivots (singular matrices, where the
// step divides nothing), a NaN entry, and batches that leave a workgroup part empty. The two forms
// agree bit for bit (the same operations on the same device). Against the oracle: the first pivot
// (chosen among exact integers, ties included) is the oracle's, and P L U = A. Later pivots may
// differ where two candidates tie in exact arithmetic and the device rounds otherwise (most likely
// NVIDIA's compiler fusing x − m·y into one FMA, which the oracle rounds twice: on the H200 three
// float64 cases chose other rows there, in both GPU forms alike).
TEST(VulkanLinalg, TopLevelLuByRowsPivotsAsTheOracle) {
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
  };
  for (DType d : {DType::float32, DType::float64}) {
    for (std::int64_t n : {2, 3, 8, 13, 16, 17, 33}) {
      const std::int64_t B = 300 / n + 3;  // never a whole number of workgroups of ⌊256 / n⌋ matrices
      // entries in {−2, ..., 2}: many ties and singular matrices; matrix 1 has a zero first column
      Array k = np::astype(lax::iota(DType::int32, {B, n, n}, 0) * 7 + lax::iota(DType::int32, {B, n, n}, 1) * 3 +
                               lax::iota(DType::int32, {B, n, n}, 2) * 5,
                           d);
      Array M = np::where(np::less(np::abs(np::sin(k * 2.1)), 0.2), 0.0,
                          np::sign(np::sin(k * 1.3)) * (np::astype(np::greater(np::sin(k * 0.7), 0.0), d) + 1.0));
      Array col0 = np::equal(lax::iota(DType::int32, {B, n, n}, 2), 0);
      Array first = np::equal(lax::iota(DType::int32, {B, n, n}, 0), 1);
      M = np::where(np::logical_and(col0, first), np::zeros({B, n, n}, d), M);
      // matrix 2 has a NaN at (1, 0)
      Array nan_at = np::logical_and(np::equal(lax::iota(DType::int32, {B, n, n}, 0), 2),
                                     np::logical_and(np::equal(lax::iota(DType::int32, {B, n, n}, 1), 1), col0));
      M = np::where(nan_at, np::full({B, n, n}, std::nan(""), d), M);
      auto [wf, wp, ws] = lax::lu(M);
      auto v = on({M}, "vulkan");
      std::array<std::vector<std::vector<double>>, 2> got;
      for (int rows = 0; rows < 2; ++rows) {
        const jxt::ScopedEnv form("JX_VK_LU_ROWS", rows ? "1" : "0");
        clear_caches();
        Counts c = counted([&] {
          auto [f, p, s] = lax::lu(v[0]);
          got[rows] = {vals(f), vals(p), vals(s)};
        });
        EXPECT_EQ(c.k.host_routines, 0u);
      }
      const std::string at = std::string(dtype_name(d)) + " n " + std::to_string(n);
      EXPECT_TRUE(same(got[1][0], got[0][0])) << at;
      EXPECT_EQ(got[1][1], got[0][1]) << at;
      EXPECT_EQ(got[1][2], got[0][2]) << at;
      const std::vector<double> a = vals(M), wantp = vals(wp);
      const std::vector<double>&f = got[1][0], &p = got[1][1];
      int first_differ = 0, recon_differ = 0;
      for (std::int64_t m = 0; m < B; ++m) {
        const std::size_t o = static_cast<std::size_t>(m * n * n);
        auto at2 = [&](const std::vector<double>& x, std::int64_t i, std::int64_t j) {
          return x[o + static_cast<std::size_t>(i * n + j)];
        };
        for (std::int64_t r = 0; r < n; ++r) first_differ += at2(p, r, 0) != at2(wantp, r, 0);
        if (m == 2) continue;  // the NaN matrix
        double most = 1.0;
        for (std::int64_t i = 0; i < n * n; ++i) most = std::max(most, std::abs(a[o + static_cast<std::size_t>(i)]));
        for (std::int64_t i = 0; i < n; ++i)  // (P L U)[i][j] = Σ_r P[i][r] Σ_k L[r][k] U[k][j]
          for (std::int64_t j = 0; j < n; ++j) {
            double plu = 0;
            for (std::int64_t r = 0; r < n; ++r) {
              if (at2(p, i, r) == 0) continue;
              for (std::int64_t k = 0; k <= std::min(r, j); ++k) plu += (k == r ? 1.0 : at2(f, r, k)) * at2(f, k, j);
            }
            const double tol = (d == DType::float64 ? 1e-9 : 1e-4) * most * static_cast<double>(n);
            recon_differ += !(std::abs(plu - at2(a, i, j)) <= tol);
          }
      }
      EXPECT_EQ(first_differ, 0) << at;
      EXPECT_EQ(recon_differ, 0) << at;
      for (std::int64_t m = 0; m < B; ++m) {  // NaN in the factors of matrix 2 only (a zero pivot divides nothing)
        bool nan = false;
        for (std::int64_t i = 0; i < n * n; ++i) nan = nan || std::isnan(f[static_cast<std::size_t>(m * n * n + i)]);
        EXPECT_EQ(nan, m == 2) << at << " matrix " << m;
      }
    }
  }
}
