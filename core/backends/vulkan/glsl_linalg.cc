#include "core/backends/vulkan/glsl_linalg.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/base/env.h"

namespace jx::vk {
namespace {

using LoadFn = std::function<std::string(int, const std::string&)>;

// What every routine's code needs: the scalar and accumulator types, the matrix size and the
// element offsets of this matrix in each operand.
struct MatrixCode {
  std::string t, acc, nan;
  std::int64_t n;
};

MatrixCode types_of(const Op& op, bool f64_math, Shader& sh) {
  const DType d = op.in[0].dtype;
  MatrixCode m;
  m.t = gtype(d);
  m.n = op.in[0].shape.back();
  m.acc = (d == DType::float64 || (f64_math && !(short_f32_sums() && short_f32_sum(m.n)))) ? "double" : m.t;
  m.nan = m.acc == "double" ? "packDouble2x32(uvec2(0u, 0x7ff80000u))" : "uintBitsToFloat(0x7fc00000u)";
  if (m.acc == "double") sh.float64 = true;
  sh.max_loop = std::max(sh.max_loop, m.n * m.n);
  return m;
}

// Output o of the routine, worked on in place (workgroup memory, global memory or the combine's
// registers): no n × n local array per invocation, whose dynamic indexing drivers put in slow
// local memory (and NVIDIA's compiler refuses at n = 16 in float64).
struct InPlace {
  const LoadFn& get_;
  const StoreAtFn& set_;
  int o;
  std::string base;
  std::string get(const std::string& i) const { return get_(o, fmt::format("{} + {}", base, i)); }
  std::string set(const std::string& i, const std::string& v) const {
    return set_(o, fmt::format("{} + {}", base, i), v);
  }
};

// Matrices of up to kUnrolledRows rows: loops of up to `most` iterations marked `[[unroll]] `
// where the device unrolls (unroll_loops), so their indices fold to constants and a matrix held in
// an invocation's arrays stays in registers.
constexpr std::int64_t kUnrolledRows = 8;
// A top-level triangular solve's column in the invocation's own array: unrolled up to 16 rows.
constexpr std::int64_t kOwnRows = 16;
std::string unroll(std::int64_t count, std::int64_t most = kUnrolledRows) {
  return unroll_loops() && count <= most ? "[[unroll]] " : "";
}

// A = L Lᵀ from A's lower triangle: L[j][j] = √(A[j][j] − Σ_{k<j} L[j][k]²),
// L[i][j] = (A[i][j] − Σ_{k<j} L[i][k] L[j][k]) / L[j][j] for i > j; NaN where a minor is not positive.
std::string cholesky_code(const MatrixCode& c, const LoadFn& load, const InPlace& L) {
  const std::int64_t n = c.n;
  auto l = [&](const std::string& i, const std::string& j) { return L.get(fmt::format("({}) * {} + ({})", i, n, j)); };
  const std::string u = unroll(n);
  std::string s = u + fmt::format("for (int q_ = 0; q_ < {}; ++q_) {{\n", n * n) + L.set("q_", c.t + "(0)") + "}\n";
  s += u + fmt::format("for (int j_ = 0; j_ < {}; ++j_) {{\n", n);
  s += fmt::format("  {} s_ = {}({});\n", c.acc, c.acc, load(0, fmt::format("ma_ + j_ * {} + j_", n)));
  s += "  " + u + fmt::format("for (int k_ = 0; k_ < j_; ++k_) s_ -= {0}({1}) * {0}({1});\n", c.acc, l("j_", "k_"));
  s += fmt::format("  const {} d_ = s_ > {}(0) ? sqrt(s_) : {};\n", c.acc, c.acc, c.nan);
  s += "  " + L.set(fmt::format("j_ * {}", n + 1), fmt::format("{}(d_)", c.t));
  s += "  " + u + fmt::format("for (int i_ = j_ + 1; i_ < {}; ++i_) {{\n", n);
  s += fmt::format("    {} u_ = {}({});\n", c.acc, c.acc, load(0, fmt::format("ma_ + i_ * {} + j_", n)));
  s += "    " + u +
       fmt::format("for (int k_ = 0; k_ < j_; ++k_) u_ -= {0}({1}) * {0}({2});\n", c.acc, l("i_", "k_"), l("j_", "k_"));
  return s + "    " + L.set(fmt::format("i_ * {} + j_", n), fmt::format("{}(u_ / d_)", c.t)) + "  }\n}\n";
}

// op(A) X = B (left side) or X op(A) = B, as the oracle: M y = r per right-hand side c_ (an int
// in scope), with M(i, j) = op(A)(i, j) (left) or op(A)(j, i) (right), solved forward (M lower) or
// backward. Right-hand sides are independent: the caller loops over them or strides them.
// `own_column`: the column is solved in the invocation's array x_ and stored once at the end
// (at top level each row would wait on the L2 for the rows before it; in workgroup memory on its
// own store and load).
// `perm` (lower unit solves of Pᵀ only): the right-hand sides are Pᵀ of the pivots in the array of
// that name, Pᵀ[i][c] = (perm[i] == c), instead of being loaded (see lu_together).
std::string triangular_column_code(const Op& op, const MatrixCode& c, const LoadFn& load, const InPlace& X,
                                   bool own_column = false, const std::string& perm = "") {
  const PrimParams& p = op.params;
  const std::int64_t n = c.n, nk = op.in[1].size() / std::max<std::int64_t>(linalg_matrices(op), 1), k = nk / n;
  const bool tr = p.transpose_a != !p.left_side, lower = p.lower != tr;
  auto M = [&](const std::string& i, const std::string& j) {
    return tr ? load(0, fmt::format("ma_ + ({}) * {} + ({})", j, n, i))
              : load(0, fmt::format("ma_ + ({}) * {} + ({})", i, n, j));
  };
  auto at = [&](const std::string& i) {
    return p.left_side ? fmt::format("({}) * {} + c_", i, k) : fmt::format("c_ * {} + ({})", n, i);
  };
  const std::string u = own_column ? unroll(n, kOwnRows) : unroll(n);
  auto x = [&](const std::string& i) { return own_column ? fmt::format("x_[{}]", i) : X.get(at(i)); };
  std::string s = own_column ? fmt::format("  {} x_[{}];\n", c.t, n) : "";
  s += "  " + u + fmt::format("for (int s_ = 0; s_ < {}; ++s_) {{\n", n);
  s += fmt::format("    const int i_ = {};\n", lower ? "s_" : fmt::format("{} - s_", n - 1));
  if (perm.empty())
    s += fmt::format("    {} v_ = {}({});\n", c.acc, c.acc, load(1, "mb_ + " + at("i_")));
  else
    s += fmt::format("    {0} v_ = {1}[i_] == c_ ? {0}(1) : {0}(0);\n", c.acc, perm);
  s +=
      "    " + u + (lower ? "for (int j_ = 0; j_ < i_; ++j_)" : fmt::format("for (int j_ = i_ + 1; j_ < {}; ++j_)", n));
  s += fmt::format(" v_ -= {0}({1}) * {0}({2});\n", c.acc, M("i_", "j_"), x("j_"));
  if (!p.unit_diagonal) s += fmt::format("    v_ /= {}({});\n", c.acc, M("i_", "i_"));
  const std::string v = fmt::format("{}(v_)", c.t);
  s += "    " + (own_column ? fmt::format("x_[i_] = {};\n", v) : X.set(at("i_"), v)) + "  }\n";
  if (own_column) s += "  " + u + fmt::format("for (int s_ = 0; s_ < {}; ++s_) ", n) + X.set(at("s_"), "x_[s_]");
  return s;
}

std::string triangular_solve_code(const Op& op, const MatrixCode& c, const LoadFn& load, const InPlace& X) {
  return unroll(rhs_columns(op)) + fmt::format("for (int c_ = 0; c_ < {}; ++c_) {{\n", rhs_columns(op)) +
         triangular_column_code(op, c, load, X) + "}\n";
}

// Column c_'s pivot: v_, the first row from c_ on with the largest |F[r][c_]|, exchanged with row
// c_ (its factors and p_), det_ negated where v_ ≠ c_. By index: the exchange reads and writes rows
// c_ and v_ only, v_ found at run time. By selects: each candidate row r_ is exchanged where
// v_ == r_, so no index depends on data (loops prefixed `u`).
std::string pivot_by_index(const MatrixCode& c, const InPlace& F) {
  const std::int64_t n = c.n;
  auto f = [&](const std::string& i, const std::string& j) { return fmt::format("({}) * {} + ({})", i, n, j); };
  std::string s = fmt::format("  for (int r_ = c_ + 1; r_ < {}; ++r_) if (abs({}) > abs({})) v_ = r_;\n", n,
                              F.get(f("r_", "c_")), F.get(f("v_", "c_")));
  s += "  if (v_ != c_) {\n";
  s += fmt::format("    for (int j_ = 0; j_ < {}; ++j_) {{\n      const {} w_ = {};\n", n, c.t, F.get(f("c_", "j_")));
  s += "      " + F.set(f("c_", "j_"), F.get(f("v_", "j_"))) + "      " + F.set(f("v_", "j_"), "w_") + "    }\n";
  return s + "    int w_ = p_[c_]; p_[c_] = p_[v_]; p_[v_] = w_;\n    det_ = -det_;\n  }\n";
}
std::string pivot_by_selects(const MatrixCode& c, const InPlace& F, const std::string& u) {
  const std::int64_t n = c.n;
  auto f = [&](const std::string& i, const std::string& j) { return fmt::format("({}) * {} + ({})", i, n, j); };
  std::string s = fmt::format("  {} b_ = abs({});\n", c.t, F.get(f("c_", "c_")));
  s += "  " + u +
       fmt::format("for (int r_ = c_ + 1; r_ < {}; ++r_) {{\n    const {} a_ = abs({});\n", n, c.t,
                   F.get(f("r_", "c_")));
  s += "    if (a_ > b_) { v_ = r_; b_ = a_; }\n  }\n";
  s += "  " + u + fmt::format("for (int r_ = c_ + 1; r_ < {}; ++r_) {{\n    const bool s_ = v_ == r_;\n", n);
  s += "    " + u +
       fmt::format("for (int j_ = 0; j_ < {}; ++j_) {{\n      const {} w_ = {}, x_ = {};\n", n, c.t,
                   F.get(f("c_", "j_")), F.get(f("r_", "j_")));
  s += "      " + F.set(f("c_", "j_"), "s_ ? x_ : w_") + "      " + F.set(f("r_", "j_"), "s_ ? w_ : x_") + "    }\n";
  s += "    const int w_ = p_[c_], x_ = p_[r_];\n    p_[c_] = s_ ? x_ : w_;\n    p_[r_] = s_ ? w_ : x_;\n  }\n";
  return s + "  if (v_ != c_) det_ = -det_;\n";
}

// A = P L U with partial pivoting (the first largest |pivot|), the packed LU, P with
// P[perm[i]][i] = 1, and det(P) = ±1; a zero pivot is left in U (no division).
//
// In an invocation's own arrays (`registers`) and up to kUnrolledRows rows the pivot is exchanged
// by selects (JX_VK_UNROLL=0: by index), and where the device unrolls (unroll_loops) every index
// folds to a constant, so the factors stay in registers: a row indexed at run time lives in memory
// private to the invocation. Same operations in the same order. On the H200, GPU time per call of
// the m = 4 DLM at N = 102400: filter 1.25 -> 0.74 ms, smoother 1.60 -> 1.15 ms, gradient
// 5.64 -> 5.18 ms. In global memory the selects would read and write every candidate row (the
// m = 8 smoother's top-level LU of 102400 matrices: 0.55 -> 1.38 ms), so there the exchange is by
// index; a top-level LU now works in the invocation's own array instead (lu_private_code).
std::string lu_code(const MatrixCode& c, const LoadFn& load, const InPlace& F, const InPlace& P, const StoreAtFn& store,
                    const std::string& mat, bool registers, std::int64_t max_rows = kUnrolledRows) {
  const std::int64_t n = c.n;
  static const bool selects_allowed = !env_is_zero("JX_VK_UNROLL");
  const bool selects = registers && selects_allowed && n <= max_rows;
  const std::string u = selects ? unroll(n, max_rows) : "", uu = selects ? unroll(n * n, max_rows * max_rows) : "";
  auto f = [&](const std::string& i, const std::string& j) { return fmt::format("({}) * {} + ({})", i, n, j); };
  std::string s = fmt::format("int p_[{}];\n{} det_ = {}(1);\n", n, c.t, c.t);
  s += uu + fmt::format("for (int q_ = 0; q_ < {}; ++q_) {{\n", n * n) + F.set("q_", load(0, "ma_ + q_")) + "}\n";
  s += u + fmt::format("for (int q_ = 0; q_ < {}; ++q_) p_[q_] = q_;\n", n);
  s += u + fmt::format("for (int c_ = 0; c_ < {}; ++c_) {{\n  int v_ = c_;\n", n);
  s += selects ? pivot_by_selects(c, F, u) : pivot_by_index(c, F);
  s += fmt::format("  const {} d_ = {};\n  if (d_ != {}(0))\n", c.t, F.get(fmt::format("c_ * {}", n + 1)), c.t);
  s += "    " + u +
       fmt::format("for (int r_ = c_ + 1; r_ < {}; ++r_) {{\n      const {} m_ = {} / d_;\n", n, c.t,
                   F.get(f("r_", "c_")));
  s += "      " + F.set(f("r_", "c_"), "m_");
  s += "      " + u + fmt::format("for (int j_ = c_ + 1; j_ < {}; ++j_) ", n) +
       F.set(f("r_", "j_"), fmt::format("{} - m_ * {}", F.get(f("r_", "j_")), F.get(f("c_", "j_")))) + "    }\n}\n";
  s += uu + fmt::format("for (int q_ = 0; q_ < {}; ++q_) {{\n", n * n) +
       P.set("q_", fmt::format("p_[q_ % {0}] == q_ / {0} ? {1}(1) : {1}(0)", n, c.t)) + "}\n";
  return s + store(2, mat, "det_");
}

// Workgroup forms: every invocation runs this code (uniform control flow), `lid` its index;
// decisions (the pivot, the diagonal) are computed by all from the same workgroup-visible values,
// so they agree, and each write is one invocation's. Same operations in the same order as above.
struct Together {
  std::int64_t wg;  // the invocations that stride (the workgroup, or its part for one matrix)
  std::string barrier;
  std::int64_t lane0 = 0;    // where count fits in wg − lane0 invocations: t = lid − lane0 on those
  std::string lane = "lid";  // this invocation's index among the wg
  // body for t = lane, lane + wg, ... < count (an int expression), t_ in scope
  std::string strided(const std::string& count, const std::string& body) const {
    if (lane0 > 0)
      return fmt::format("if ({0} >= {1}) for (int t_ = {0} - {1}; t_ < {2}; t_ += {3}) {{\n{4}}}\n", lane, lane0,
                         count, wg, body);
    return fmt::format("for (int t_ = {}; t_ < {}; t_ += {}) {{\n{}}}\n", lane, count, wg, body);
  }
};

std::string cholesky_together(const MatrixCode& c, const LoadFn& load, const InPlace& L, const Together& w) {
  const std::int64_t n = c.n;
  auto l = [&](const std::string& i, const std::string& j) { return L.get(fmt::format("({}) * {} + ({})", i, n, j)); };
  std::string s = w.strided(std::to_string(n * n), L.set("t_", c.t + "(0)")) + w.barrier;
  s += fmt::format("for (int j_ = 0; j_ < {}; ++j_) {{\n", n);
  s += fmt::format("  {} s_ = {}({});\n", c.acc, c.acc, load(0, fmt::format("ma_ + j_ * {} + j_", n)));
  s += fmt::format("  for (int k_ = 0; k_ < j_; ++k_) s_ -= {0}({1}) * {0}({1});\n", c.acc, l("j_", "k_"));
  s += fmt::format("  const {} d_ = s_ > {}(0) ? sqrt(s_) : {};\n", c.acc, c.acc, c.nan);
  std::string row = "const int i_ = j_ + 1 + t_;\n";
  row += fmt::format("{} u_ = {}({});\n", c.acc, c.acc, load(0, fmt::format("ma_ + i_ * {} + j_", n)));
  row +=
      fmt::format("for (int k_ = 0; k_ < j_; ++k_) u_ -= {0}({1}) * {0}({2});\n", c.acc, l("i_", "k_"), l("j_", "k_"));
  row += L.set(fmt::format("i_ * {} + j_", n), fmt::format("{}(u_ / d_)", c.t));
  s += w.strided(fmt::format("{} - 1 - j_", n), row);
  s += "  if (lid == 0) " + L.set(fmt::format("j_ * {}", n + 1), fmt::format("{}(d_)", c.t));
  return s + w.barrier + "}\n";
}

// One elimination step per barrier: pivot c_ reads the matrix from one buffer and writes the
// exchanged, eliminated matrix to the other (the factors' and the permutation's own storage, used
// in turn), so no invocation writes what another reads in the same step. Entry (r, j) of the
// result, with v the pivot row and s(r) the row that the exchange of rows c and v brings to r:
//   r ≤ c or j < c or a zero pivot: X[s(r)][j];   r > c, j = c: X[s(r)][c] / d;
//   r > c, j > c: X[s(r)][j] − (X[s(r)][c] / d) X[v][j],   d = X[v][c];
// the same operations as lu_code. Pivot 0 reads the input and writes the buffer that makes the
// last step write the factors; the permutation is written after it.
// Several independent matrices of one size and type (jobs) are factored at once: the workgroup
// splits into equal parts, part g_ works on job g_, and all share the barriers.
// A job with `perm` (the only job) keeps its pivots in the int array of that name, declared by the
// caller, and writes no P: P's storage is only its working buffer. Every invocation holds the same
// pivots, and the code ends with a barrier after the factors' last write (the det is written after).
// The pivot steps of a lu factored alone unrolled up to kOwnRows rows where the device unrolls:
// each step's column a constant, so its pivot search loads only the rows below it. H200, N =
// 102400, median of 3 interleaved rounds (bench/results/2026-11-28-h200-lu-unroll): the m = 13
// filter 8.81 -> 7.75 ms, smoother 11.42 -> 10.38 ms, m = 16 filter 13.04 -> 10.78 ms. Two lus
// factored together (the gradient's transposed combine) stay a loop: unrolled, the m = 13
// gradient at N = 1600 took 2.35 against 2.26 ms. JX_VK_WG_LU_UNROLL=0: a loop.
// (JX_VK_WG_LU_UNROLL=2: lus factored together too, for measuring.)
bool unrolled_pivots(std::int64_t n, std::int64_t jobs) {
  static const std::int64_t mode = env_int("JX_VK_WG_LU_UNROLL", 1);
  return (mode == 2 || (mode == 1 && jobs == 1)) && unroll_loops() && n <= kOwnRows;
}

struct LuJob {
  MatrixCode c;
  const LoadFn& load;
  InPlace F, P;
  const StoreAtFn& store;
  std::string mat;
  std::string perm = {};
};

// What both forms of the workgroup LU share: the jobs, their sizes, the pivots' array, the loops'
// unrolling, the invocations of one job (w) and of all (all).
struct LuForm {
  const std::vector<LuJob>& jobs;
  std::int64_t n, q;
  std::string pn, ul;
  Together w, all;
  std::string f(const std::string& i, const std::string& j) const { return fmt::format("({}) * {} + ({})", i, n, j); }
  std::string each(const std::function<std::string(const LuJob&)>& code) const {
    if (q == 1) return code(jobs[0]);
    std::string s;
    for (std::int64_t g = 0; g < q; ++g)
      s += fmt::format("{}if (g_ == {}) {{\n", g ? "else " : "", g) + code(jobs[g]) + "}";
    return s + "\n";
  }
};

// The steps through workgroup memory: each pivot reads the whole matrix from one buffer and
// writes it, exchanged and eliminated, to the other (F and P in turn).
std::string lu_ping_pong(const LuForm& L) {
  const std::int64_t n = L.n;
  auto first = [&](const LuJob& j) -> const InPlace& { return n % 2 == 0 ? j.F : j.P; };
  auto second = [&](const LuJob& j) -> const InPlace& { return n % 2 == 0 ? j.P : j.F; };
  auto step = [&](const LuJob& jb, const InPlace& X, const InPlace& Y) {
    const MatrixCode& c = jb.c;
    auto f = [&](const std::string& i, const std::string& j) { return L.f(i, j); };
    // the pivot search: every row's |X[r][k]| loaded (independent loads), rows above k ignored
    std::string s = fmt::format("  int v_ = k_;\n  {} b_ = abs({});\n", c.t, X.get(f("k_", "k_")));
    s += fmt::format("  {}for (int r_ = 1; r_ < {}; ++r_) {{\n    const {} a_ = abs({});\n", L.ul, n, c.t,
                     X.get(f("r_", "k_")));
    s += "    if (r_ > k_ && a_ > b_) {\n      b_ = a_;\n      v_ = r_;\n    }\n  }\n";
    s += fmt::format(
        "  if (v_ != k_) {{\n    int w_ = {0}[k_]; {0}[k_] = {0}[v_]; {0}[v_] = w_;\n    det_ = -det_;\n  }}\n", L.pn);
    s += fmt::format("  const {} d_ = {};\n", c.t, X.get(f("v_", "k_")));
    std::string e = fmt::format("const int r_ = t_ / {0}, j_ = t_ % {0};\n", n);
    e += "const int s_ = r_ == k_ ? v_ : r_ == v_ ? k_ : r_;\n";
    e += fmt::format("{} x_ = {};\n", c.t, X.get(f("s_", "j_")));
    e += fmt::format("if (r_ > k_ && j_ >= k_ && d_ != {}(0))\n", c.t);
    e += fmt::format("  x_ = j_ == k_ ? x_ / d_ : x_ - ({} / d_) * {};\n", X.get(f("s_", "k_")), X.get(f("v_", "j_")));
    return s + L.w.strided(std::to_string(n * n), e + Y.set("t_", "x_"));
  };
  // pivot 0 reads the input itself (no copy of it first), then pivots 1, 2, ... in turn
  std::string s = "{\nconst int k_ = 0;\n";
  s += L.each([&](const LuJob& j) {
    return step(j, InPlace{j.load, j.store, 0, "ma_"}, second(j));
  }) + "}\n" +
       L.all.barrier;
  s += fmt::format("{}for (int c_ = 1; c_ < {}; c_ += 2) {{\n{{\nconst int k_ = c_;\n", L.ul, n);
  s += L.each([&](const LuJob& j) { return step(j, second(j), first(j)); }) + "}\n" + L.all.barrier;
  s += fmt::format("if (c_ + 1 < {}) {{\nconst int k_ = c_ + 1;\n", n);
  return s + L.each([&](const LuJob& j) { return step(j, first(j), second(j)); }) + "}\n" + L.all.barrier + "}\n";
}

// The steps with each invocation's entries in its registers: rows stay where they are, the
// pivots' array maps positions to rows (exchanged as the oracle exchanges rows, so the same pivots
// from the same values), and an entry (r, j) whose row holds position > k is eliminated in place,
//   j = k: x / d;   j > k: x − (X[r][k] / d) X[p_k][j],   d = X[p_k][k],
// the same operations as lu_code. Step k reads column k and the pivot row and writes the entries
// right of column k below the pivot (the only ones read again): one buffer (P's storage), one
// barrier a step, and no step for the last pivot (it changes nothing). The last step stores the
// factors, row r at its position, before its barrier.
std::string lu_in_registers(const LuForm& L) {
  const std::int64_t n = L.n, nn = n * n, T = (nn + L.w.wg - 1) / L.w.wg;
  const std::string& t = L.jobs[0].c.t;
  std::string s;
  for (std::int64_t u = 0; u < T; ++u)
    s += fmt::format(
        "const int t{0}_ = {1} + {2}, r{0}_ = t{0}_ / {3}, j{0}_ = t{0}_ % {3};\nint ps{0}_ = r{0}_;\n{4} "
        "x{0}_ = {4}(0);\n",
        u, L.w.lane, u * L.w.wg, n, t);
  s += L.each([&](const LuJob& j) {
    std::string b;
    for (std::int64_t u = 0; u < T; ++u)
      b += fmt::format("if (t{}_ < {}) x{}_ = {};\n", u, nn, u, j.load(0, fmt::format("ma_ + t{}_", u)));
    return b;
  });
  // entry u of the factors, at its row's position (after the last step's update)
  auto factor = [&](const LuJob& jb, std::int64_t u) {
    return jb.F.set(L.f(fmt::format("ps{}_", u), fmt::format("j{}_", u)), fmt::format("x{}_", u));
  };
  auto step = [&](const LuJob& jb, bool input, bool store) {
    auto X = [&](const std::string& r, const std::string& j) {
      return input ? jb.load(0, "ma_ + " + L.f(r, j)) : jb.P.get(L.f(r, j));
    };
    std::string e = fmt::format("  int v_ = k_;\n  {} b_ = abs({});\n", t, X(L.pn + "[k_]", "k_"));
    e += fmt::format("  {}for (int i_ = 1; i_ < {}; ++i_) {{\n    const {} a_ = abs({});\n", L.ul, n, t,
                     X(L.pn + "[i_]", "k_"));
    e += "    if (i_ > k_ && a_ > b_) {\n      b_ = a_;\n      v_ = i_;\n    }\n  }\n";
    e += fmt::format(
        "  if (v_ != k_) {{\n    int w_ = {0}[k_]; {0}[k_] = {0}[v_]; {0}[v_] = w_;\n    det_ = -det_;\n  }}\n", L.pn);
    e += fmt::format("  const int pr_ = {}[k_];\n  const {} d_ = {};\n", L.pn, t, X("pr_", "k_"));
    for (std::int64_t u = 0; u < T; ++u) {
      const std::string x = fmt::format("x{}_", u), ps = fmt::format("ps{}_", u), r = fmt::format("r{}_", u),
                        jj = fmt::format("j{}_", u);
      e += fmt::format("  if (t{}_ < {}) {{\n", u, nn) +
           fmt::format("  {0} = {0} == k_ ? v_ : {0} == v_ ? k_ : {0};\n", ps);
      e += fmt::format("  if ({} > k_ && {} >= k_) {{\n", ps, jj);
      e += fmt::format("    if (d_ != {}(0)) {} = {} == k_ ? {} / d_ : {} - ({} / d_) * {};\n", t, x, jj, x, x,
                       X(r, "k_"), X("pr_", jj));
      e += fmt::format("    if ({} > k_) {}", jj, jb.P.set(L.f(r, jj), x)) + "  }\n";
      if (store) e += "  " + factor(jb, u);
      e += "  }\n";
    }
    return e;
  };
  s += "{\nconst int k_ = 0;\n" + L.each([&](const LuJob& j) { return step(j, true, n <= 2); }) + "}\n" + L.all.barrier;
  if (n <= 2) return s;
  s += fmt::format("{}for (int k_ = 1; k_ < {}; ++k_) {{\n", L.ul, n - 1);
  s += L.each([&](const LuJob& j) { return step(j, false, false); });
  s += fmt::format("if (k_ == {}) {{\n", n - 2) + L.each([&](const LuJob& j) {
    std::string b;
    for (std::int64_t u = 0; u < T; ++u) b += fmt::format("if (t{}_ < {}) ", u, nn) + factor(j, u);
    return b;
  });
  return s + "}\n" + L.all.barrier + "}\n";
}

// JX_VK_WG_LU_REGS=0: the ping-pong form (read at each render: tests compare both).
bool lu_registers() { return !env_is_zero("JX_VK_WG_LU_REGS"); }

std::string lu_together(const std::vector<LuJob>& jobs, const Together& all) {
  const std::int64_t n = jobs[0].c.n, q = static_cast<std::int64_t>(jobs.size());
  const std::string& folded = jobs[0].perm;
  if (!folded.empty() && q > 1) throw Error("lu_together: a job that keeps its pivots must be the only one");
  LuForm L{jobs, n, q, folded.empty() ? "p_" : folded, unrolled_pivots(n, q) ? "[[unroll]] " : "", all, all};
  if (q > 1) L.w.wg = all.wg / q, L.w.lane = "gq_";
  const MatrixCode& c0 = jobs[0].c;
  std::string s = q > 1 ? fmt::format("const int g_ = lid / {0}, gq_ = lid - g_ * {0};\n", L.w.wg) : "";
  if (folded.empty()) s += fmt::format("int p_[{}];\n", n);
  s += fmt::format("{} det_ = {}(1);\n", c0.t, c0.t);
  s += fmt::format("for (int q_ = 0; q_ < {}; ++q_) {}[q_] = q_;\n", n, L.pn);
  s += lu_registers() ? lu_in_registers(L) : lu_ping_pong(L);
  return s + L.each([&](const LuJob& j) {
    const std::string p =
        j.perm.empty() ? L.w.strided(std::to_string(n * n),
                                     j.P.set("t_", fmt::format("p_[t_ % {0}] == t_ / {0} ? {1}(1) : {1}(0)", n, j.c.t)))
                       : "";
    return p + "if (" + L.w.lane + " == 0) {\n" + j.store(2, j.mat, "det_") + "}\n";
  });
}

// A workgroup's triangular solve (an invocation per column, the cooperative combine's inverse) in
// the invocation's own array too, up to kOwnRows rows (unrolled, so the column stays in registers):
// in workgroup memory each row waited for the rows before it to be stored and loaded back. H200,
// N = 102400, median of 3 interleaved rounds (bench/results/2026-11-27-h200-own-column): the
// m = 13 filter 12.34 -> 10.63 ms, smoother 15.11 -> 13.44 ms, m = 16 filter 18.22 -> 14.69 ms;
// at N = 1600 the m = 13 gradient 2.82 -> 2.39 ms. JX_VK_WG_OWN_COLUMN=0: in workgroup memory.
bool own_column_in_workgroup(std::int64_t rows) {
  static const bool on = !env_is_zero("JX_VK_WG_OWN_COLUMN");
  return on && rows <= kOwnRows;
}

}  // namespace

std::string linalg_workgroup_code(const Op& op, std::int64_t wg, std::int64_t lane0, const std::string& barrier,
                                  bool f64_math, Shader& sh, const LoadFn& load, const LoadFn& load_out,
                                  const StoreAtFn& store_at, std::int64_t& iterations, const std::string& perm) {
  const MatrixCode c = types_of(op, f64_math, sh);
  const std::int64_t n = c.n, mats = linalg_matrices(op);
  auto strides = [&](std::int64_t m) { return (m + wg - 1) / wg; };
  Together w{wg, barrier};
  if (op.prim == Prim::triangular_solve) {  // an invocation per (matrix, right-hand side)
    const std::int64_t k = rhs_columns(op), nk = n * k;
    if (lane0 + mats * k <= wg) w.lane0 = lane0;
    iterations += strides(mats * k) * (1 + n * (n + 1));
    std::string body =
        fmt::format("const int m_ = t_ / {0}, c_ = t_ % {0};\nconst int ma_ = m_ * {1};\nconst int mb_ = m_ * {2};\n",
                    std::max<std::int64_t>(k, 1), n * n, nk);
    return "{\n" +
           w.strided(std::to_string(mats * k),
                     body + triangular_column_code(op, c, load, InPlace{load_out, store_at, 0, "mb_"},
                                                   own_column_in_workgroup(n), perm)) +
           "}\n";
  }
  std::string s = fmt::format("for (int mat_ = 0; mat_ < {}; ++mat_) {{\nconst int ma_ = mat_ * {};\n", mats, n * n);
  if (op.prim == Prim::cholesky) {
    s += cholesky_together(c, load, InPlace{load_out, store_at, 0, "ma_"}, w);
    iterations += mats * (strides(n * n) + n * (n + strides(n) * (1 + n)));
  } else if (op.prim == Prim::lu) {
    if (!perm.empty() && mats != 1) throw Error("linalg_workgroup_code: pivots kept for a batch of matrices");
    s += lu_together({LuJob{c, load, InPlace{load_out, store_at, 0, "ma_"}, InPlace{load_out, store_at, 1, "ma_"},
                            store_at, "mat_", perm}},
                     w);
    iterations += mats * (2 * strides(n * n) + n + n * (n + strides(n * n)));
  } else {
    throw Error(fmt::format("linalg_workgroup_code: {} is not a linear-algebra routine", prim_name(op.prim)));
  }
  return "{\n" + s + "}\n}\n";
}

std::string lu_workgroup_code(const std::vector<LinalgIo>& jobs, std::int64_t wg, const std::string& barrier,
                              bool f64_math, Shader& sh, std::int64_t& iterations) {
  std::vector<LuJob> lu;
  for (const LinalgIo& j : jobs) {
    if (j.op.prim != Prim::lu || linalg_matrices(j.op) != 1 ||
        j.op.in[0].shape.back() != jobs[0].op.in[0].shape.back() || j.op.in[0].dtype != jobs[0].op.in[0].dtype)
      throw Error("lu_workgroup_code: the jobs are not single lu matrices of one size and type");
    lu.push_back(LuJob{types_of(j.op, f64_math, sh), j.load, InPlace{j.load_out, j.store_at, 0, "ma_"},
                       InPlace{j.load_out, j.store_at, 1, "ma_"}, j.store_at, "0"});
  }
  const std::int64_t n = lu[0].c.n, part = wg / static_cast<std::int64_t>(jobs.size());
  const std::int64_t strides = (n * n + part - 1) / part;
  iterations += 2 * strides + n + n * (n + strides);
  return "{\nconst int ma_ = 0;\n" + lu_together(lu, Together{wg, barrier}) + "}\n";
}

bool is_linalg(Prim p) { return p == Prim::cholesky || p == Prim::triangular_solve || p == Prim::lu; }

std::int64_t linalg_matrices(const Op& op) {
  const std::int64_t n = op.in[0].shape.back();
  return n ? op.in[0].size() / (n * n) : numel(Shape(op.in[0].shape.begin(), op.in[0].shape.end() - 2));
}

std::int64_t rhs_columns(const Op& op) {
  const std::int64_t n = op.in[0].shape.back();
  return op.in[1].size() / std::max<std::int64_t>(linalg_matrices(op) * n, 1);
}

std::int64_t linalg_iterations(const Op& op) {
  const std::int64_t n = op.in[0].shape.back();
  if (op.prim == Prim::triangular_solve) {
    const std::int64_t k = rhs_columns(op);
    return k * n * (n + 1) + op.in[1].size() / std::max<std::int64_t>(linalg_matrices(op), 1);
  }
  return n * n * n / 2 + 3 * n * n + n;  // the eliminations, loads and stores
}

std::string linalg_matrix_code(const Op& op, const std::string& mat, bool f64_math, Shader& sh, const LoadFn& load,
                               const LoadFn& load_out, const StoreAtFn& store_at, bool registers) {
  const MatrixCode c = types_of(op, f64_math, sh);
  std::string s = "{\n";
  s += fmt::format("const int ma_ = ({}) * {};\n", mat, c.n * c.n);
  switch (op.prim) {
    case Prim::cholesky: s += cholesky_code(c, load, InPlace{load_out, store_at, 0, "ma_"}); break;
    case Prim::triangular_solve: {
      const std::int64_t nk = op.in[1].size() / std::max<std::int64_t>(linalg_matrices(op), 1);
      s += fmt::format("const int mb_ = ({}) * {};\n", mat, nk) +
           triangular_solve_code(op, c, load, InPlace{load_out, store_at, 0, "mb_"});
      break;
    }
    case Prim::lu:
      s += lu_code(c, load, InPlace{load_out, store_at, 0, "ma_"}, InPlace{load_out, store_at, 1, "ma_"}, store_at, mat,
                   registers);
      break;
    default: throw Error(fmt::format("linalg_matrix_code: {} is not a linear-algebra routine", prim_name(op.prim)));
  }
  return s + "}\n";
}

namespace {

// A top-level lu in the invocation's own array `f_`: in global memory each pivot step reads what
// the step before wrote, and every such read waits on an L2 round trip (the m = 13 DLM's LU of 200
// matrices took 0.235 ms on the H200, one invocation each). The factors are loaded into `f_`,
// factored there and stored once; up to kPrivateRows rows unrolled with the pivot exchanged by
// selects, so `f_` stays in registers. H200, the DLM smoother's LU of 102400 matrices: m = 8
// 0.55 -> 0.22 ms; m = 13 2.40 -> 0.59 ms (0.78 by index in `f_`); m = 16 4.33 -> 1.79 ms by
// index in `f_` (2.79 unrolled, hence the 13 rows). Arrays of up to kPrivateBytes only: NVIDIA's compiler refuses a
// 16 × 16 float64 array. JX_VK_LINALG_PRIVATE=0: in global memory, for measuring.
constexpr std::int64_t kPrivateBytes = 1024, kPrivateRows = 13;
bool in_private_arrays(std::int64_t bytes) {
  static const bool on = !env_is_zero("JX_VK_LINALG_PRIVATE");
  return on && bytes <= kPrivateBytes;
}
bool lu_in_private_array(const Op& op) {
  const std::int64_t n = op.in[0].shape.back();
  return op.prim == Prim::lu && in_private_arrays(n * n * dtype_size(op.in[0].dtype));
}

std::string lu_private_code(const Op& op, bool f64_math, Shader& sh, const LoadFn& load, const LoadFn& load_out,
                            const StoreAtFn& store_at) {
  const MatrixCode c = types_of(op, f64_math, sh);
  const std::int64_t nn = c.n * c.n;
  const LoadFn get = [](int, const std::string& off) { return fmt::format("f_[{}]", off); };
  const StoreAtFn set = [](int, const std::string& off, const std::string& v) {
    return fmt::format("f_[{}] = {};\n", off, v);
  };
  std::string s = fmt::format("{{\nconst int ma_ = gi * {};\n{} f_[{}];\n", nn, c.t, nn);
  s += lu_code(c, load, InPlace{get, set, 0, "0"}, InPlace{load_out, store_at, 1, "ma_"}, store_at, "gi", true,
               kPrivateRows);
  s += unroll(nn, kPrivateRows * kPrivateRows) + fmt::format("for (int q_ = 0; q_ < {}; ++q_) ", nn) +
       store_at(0, "ma_ + q_", "f_[q_]");
  return s + "}\n";
}

// A top-level lu with an invocation per row: G = ⌊256 / n⌋ matrices a workgroup, n invocations
// each, every row's n entries in its invocation's registers (the steps unrolled on GPUs, so every
// index folds). Rows stay where they are and each knows its position, exchanged as the oracle
// exchanges rows. Step k (k < n − 1; the last pivot changes nothing):
//   1. the rows at positions ≥ k write |X[r][k]| by position; a barrier;
//   2. every invocation of the matrix runs the oracle's search over them (the first largest, the
//      same comparisons, so the same pivot v, NaN included); the row at position v writes its
//      entries from column k on; a barrier;
//   3. positions k and v exchange (det negated where v ≠ k), and each row below position k, where
//      d = X[v][k] ≠ 0: m = X[r][k] / d, X[r][k] = m, X[r][j] −= m X[v][j] for j > k
//      (lu_code's operations, so its values).
// The factors are stored row r at its position; P[r][c] = (c == position of r). The step's reads
// happen before the next step's first barrier, so two small arrays serve every step. H200,
// N = 102400 (bench/results/2026-11-28-h200-lu-rows): the m = 16 smoother's LU 1.79 -> 0.58 ms
// (the call 11.48 -> 10.25 ms), m = 13 smoother 7.38 -> 7.14 ms, m = 16 gradient 65.43 -> 64.27 ms
// (JX_VK_LU_ROWS=0: an invocation per matrix, lu_private_code or in global memory; read at each
// render: tests compare both).
constexpr std::int64_t kRowsMax = 64;
bool lu_by_rows(const Op& op) {
  const std::int64_t n = op.in[0].shape.back();
  return !env_is_zero("JX_VK_LU_ROWS") && op.prim == Prim::lu && n >= 2 && n <= kRowsMax;
}

std::string lu_rows_code(const Op& op, const MatrixCode& c, const LoadFn& load, const StoreAtFn& store_at) {
  const std::int64_t n = c.n, G = kWorkgroup / n, count = linalg_matrices(op);
  const std::string& t = c.t;
  const std::string u = unroll(n, kOwnRows);  // beyond 16 rows a_ is indexed at run time
  std::string s = fmt::format("shared {0} kv_[{1}];\nshared {0} pv_[{1}];\nvoid main() {{\n", t, G * n);
  s += fmt::format(
      "  const int lid = int(gl_LocalInvocationIndex), g_ = lid / {0}, i_ = lid % {0};\n"
      "  const int mat = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {1} + g_;\n"
      "  const bool on_ = g_ < {1} && mat < {2};\n"
      "  const int ma_ = mat * {3}, kb_ = min(g_, {4}) * {0};\n",
      n, G, count, n * n, G - 1);
  s += fmt::format("  {} a_[{}];\n", t, n);
  s += "  " + u +
       fmt::format("for (int j_ = 0; j_ < {}; ++j_) a_[j_] = on_ ? {} : {}(0);\n", n,
                   load(0, fmt::format("ma_ + i_ * {} + j_", n)), t);
  s += fmt::format("  int ps_ = i_;\n  {0} det_ = {0}(1);\n", t);
  s += "  " + u + fmt::format("for (int k_ = 0; k_ < {}; ++k_) {{\n", n - 1);
  s += "    if (on_ && ps_ >= k_) kv_[kb_ + ps_] = abs(a_[k_]);\n    barrier();\n";
  s += fmt::format("    int v_ = k_;\n    {} b_ = kv_[kb_ + k_];\n", t);
  s += "    " + u + fmt::format("for (int r_ = k_ + 1; r_ < {}; ++r_) {{\n", n);
  s += fmt::format("      const {} x_ = kv_[kb_ + r_];\n      if (x_ > b_) {{\n        b_ = x_;\n", t);
  s += "        v_ = r_;\n      }\n    }\n";
  s += "    if (on_ && ps_ == v_) " + u + fmt::format("for (int j_ = k_; j_ < {}; ++j_) pv_[kb_ + j_] = a_[j_];\n", n);
  s += "    barrier();\n";
  s += "    if (v_ != k_) {\n      det_ = -det_;\n      ps_ = ps_ == k_ ? v_ : ps_ == v_ ? k_ : ps_;\n    }\n";
  s += fmt::format("    const {0} d_ = pv_[kb_ + k_];\n    if (ps_ > k_ && d_ != {0}(0)) {{\n", t);
  s += fmt::format("      const {} m_ = a_[k_] / d_;\n      a_[k_] = m_;\n", t);
  s += "      " + u + fmt::format("for (int j_ = k_ + 1; j_ < {}; ++j_) a_[j_] = a_[j_] - m_ * pv_[kb_ + j_];\n", n);
  s += "    }\n  }\n  if (on_) {\n";
  s += "    " + u + fmt::format("for (int j_ = 0; j_ < {}; ++j_) {{\n", n);
  s += "      " + store_at(0, fmt::format("ma_ + ps_ * {} + j_", n), "a_[j_]");
  s += "      " + store_at(1, fmt::format("ma_ + i_ * {} + j_", n), fmt::format("j_ == ps_ ? {0}(1) : {0}(0)", t));
  s += "    }\n    if (i_ == 0) " + store_at(2, "mat", "det_");
  return s + "  }\n}\n";
}

}  // namespace

std::optional<Shader> render_linalg_routine(const Op& op, bool f64_math, int max_buffers) {
  const DType d = op.in[0].dtype;
  const int nin = static_cast<int>(op.in.size()), nout = static_cast<int>(op.out.size());
  if (!is_linalg(op.prim) || !is_floating(d) || nin + nout > max_buffers) return std::nullopt;
  Shader sh;
  sh.name = std::string(prim_name(op.prim));
  sh.buffers = nin + nout;
  // triangular_solve: an invocation per (matrix, right-hand side), whose columns are independent
  const bool columns = op.prim == Prim::triangular_solve;
  sh.invocations = linalg_matrices(op) * (columns ? rhs_columns(op) : 1);
  sh.float64 = d == DType::float64;
  std::string s = glsl_header(kWorkgroup);
  for (int i = 0; i < nin; ++i)
    s += fmt::format("layout(std430, set = 0, binding = {0}) readonly buffer B{0} {{ {1} d[]; }} in{0};\n", i,
                     gtype(op.in[i].dtype));
  for (int o = 0; o < nout; ++o)
    s += fmt::format("layout(std430, set = 0, binding = {0}) buffer O{1} {{ {2} d[]; }} out{1};\n", nin + o, o,
                     gtype(op.out[o].dtype));
  const LoadFn load = [](int b, const std::string& off) { return fmt::format("in{}.d[{}]", b, off); };
  const LoadFn load_out = [](int o, const std::string& off) { return fmt::format("out{}.d[{}]", o, off); };
  const StoreAtFn store_at = [](int o, const std::string& off, const std::string& v) {
    return fmt::format("out{}.d[{}] = {};\n", o, off, v);
  };
  if (lu_by_rows(op)) {
    const MatrixCode c = types_of(op, f64_math, sh);
    const std::int64_t G = kWorkgroup / c.n;
    sh.invocations = (linalg_matrices(op) + G - 1) / G * kWorkgroup;
    s += prelude(sh.float64 || f64_math, f64_math);
    sh.glsl = s + lu_rows_code(op, c, load, store_at);
    return sh;
  }
  std::string body;
  if (columns) {
    const MatrixCode c = types_of(op, f64_math, sh);
    const std::int64_t k = rhs_columns(op);
    body = fmt::format(
               "{{\nconst int c_ = gi % {0};\nconst int ma_ = (gi / {0}) * {1};\nconst int mb_ = (gi / {0}) * {2};\n",
               k, c.n * c.n, c.n * k) +
           triangular_column_code(op, c, load, InPlace{load_out, store_at, 0, "mb_"},
                                  in_private_arrays(c.n * dtype_size(d))) +
           "}\n";
  } else if (lu_in_private_array(op)) {
    body = lu_private_code(op, f64_math, sh, load, load_out, store_at);
  } else {
    body = linalg_matrix_code(op, "gi", f64_math, sh, load, load_out, store_at);
  }
  s += prelude(sh.float64 || f64_math, f64_math);
  s += fmt::format(
      "void main() {{\n  const int gi = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n  if (gi >= {}) return;\n",
      kWorkgroup, sh.invocations);
  sh.glsl = s + body + "}\n";
  return sh;
}

}  // namespace jx::vk
