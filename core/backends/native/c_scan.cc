#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/base/errors.h"
#include "core/backends/native/c_renderer.h"

namespace jx::native {

namespace {

// Dense routines on row-major batches, matching core/backends/cpu/cpu_linalg.cc (double
// accumulation). In a compiled loop there is no host to throw to: a matrix that is not positive
// definite gives NaNs (as in JAX), a zero pivot gives inf/NaN.
const char* kRoutines = R"(
#define JX_ROUTINES(T, S) \
static void jx_chol_##S(const T* a, T* l, int64_t n, int64_t batch) { \
  for (int64_t b = 0; b < batch; ++b, a += n * n, l += n * n) { \
    for (int64_t i = 0; i < n * n; ++i) l[i] = 0; \
    int bad = 0; \
    for (int64_t j = 0; j < n && !bad; ++j) { \
      double s = a[j * n + j]; \
      for (int64_t k = 0; k < j; ++k) s -= (double)l[j * n + k] * l[j * n + k]; \
      if (!(s > 0.0)) { bad = 1; break; } \
      double d = sqrt(s); \
      l[j * n + j] = (T)d; \
      for (int64_t i = j + 1; i < n; ++i) { \
        double t = a[i * n + j]; \
        for (int64_t k = 0; k < j; ++k) t -= (double)l[i * n + k] * l[j * n + k]; \
        l[i * n + j] = (T)(t / d); \
      } \
    } \
    if (bad) for (int64_t i = 0; i < n * n; ++i) l[i] = (T)NAN; \
  } \
} \
static void jx_trsm_##S(const T* a, const T* b, T* x, int64_t n, int64_t k, int64_t batch, int left, int lower, int trans, int unit) { \
  const int tr = trans != !left; \
  const int low = lower != tr; \
  if (left && k <= 64) { /* a row of right-hand sides at once (vectorizes over c); each x[i][c] subtracts its terms in the same order */ \
    double v[64]; \
    for (int64_t bi = 0; bi < batch; ++bi, a += n * n, b += n * k, x += n * k) \
      for (int64_t s = 0; s < n; ++s) { \
        const int64_t i = low ? s : n - 1 - s; \
        for (int64_t c = 0; c < k; ++c) v[c] = b[i * k + c]; \
        for (int64_t j = low ? 0 : i + 1; j < (low ? i : n); ++j) { \
          const double aij = (double)(tr ? a[j * n + i] : a[i * n + j]); \
          for (int64_t c = 0; c < k; ++c) v[c] -= aij * x[j * k + c]; \
        } \
        if (!unit) { const double d = (double)a[i * n + i]; for (int64_t c = 0; c < k; ++c) v[c] /= d; } \
        for (int64_t c = 0; c < k; ++c) x[i * k + c] = (T)v[c]; \
      } \
    return; \
  } \
  for (int64_t bi = 0; bi < batch; ++bi, a += n * n, b += n * k, x += n * k) \
    for (int64_t c = 0; c < k; ++c) \
      for (int64_t s = 0; s < n; ++s) { \
        const int64_t i = low ? s : n - 1 - s; \
        double v = b[left ? i * k + c : c * n + i]; \
        if (low) { for (int64_t j = 0; j < i; ++j) v -= (double)(tr ? a[j * n + i] : a[i * n + j]) * x[left ? j * k + c : c * n + j]; } \
        else { for (int64_t j = i + 1; j < n; ++j) v -= (double)(tr ? a[j * n + i] : a[i * n + j]) * x[left ? j * k + c : c * n + j]; } \
        if (!unit) v /= (double)a[i * n + i]; \
        x[left ? i * k + c : c * n + i] = (T)v; \
      } \
} \
static void jx_lu_##S(const T* a, T* f, T* pm, T* sign, int64_t n, int64_t batch) { \
  int64_t perm[64]; \
  for (int64_t b = 0; b < batch; ++b, a += n * n, f += n * n, pm += n * n) { \
    memcpy(f, a, sizeof(T) * n * n); \
    for (int64_t i = 0; i < n; ++i) perm[i] = i; \
    T det = 1; \
    for (int64_t c = 0; c < n; ++c) { \
      int64_t piv = c; \
      for (int64_t r = c + 1; r < n; ++r) if (fabs((double)f[r * n + c]) > fabs((double)f[piv * n + c])) piv = r; \
      if (piv != c) { \
        for (int64_t j = 0; j < n; ++j) { T t = f[c * n + j]; f[c * n + j] = f[piv * n + j]; f[piv * n + j] = t; } \
        int64_t t = perm[c]; perm[c] = perm[piv]; perm[piv] = t; det = -det; \
      } \
      const T d = f[c * n + c]; \
      if (d == 0) continue; \
      for (int64_t r = c + 1; r < n; ++r) { \
        const T m = f[r * n + c] / d; \
        f[r * n + c] = m; \
        for (int64_t j = c + 1; j < n; ++j) f[r * n + j] -= m * f[c * n + j]; \
      } \
    } \
    for (int64_t i = 0; i < n * n; ++i) pm[i] = 0; \
    for (int64_t i = 0; i < n; ++i) pm[perm[i] * n + i] = 1; \
    sign[b] = det; \
  } \
}
JX_ROUTINES(float, f)
JX_ROUTINES(double, d)
)";

// pad: fill, then copy the operand into its window; concatenate: per outer index, each
// operand's contiguous chunk in turn.
std::string movement_call(const Op& op, const std::vector<std::string>& in, const std::string& out) {
  const AVal& a = op.in[0];
  const std::string T = c_type(a.dtype);
  if (op.prim == Prim::pad) {
    const auto ost = row_major_strides(op.out[0].shape);
    std::string s =
        fmt::format("{{ {0}* o = ({0}*){1}; const {0}* x = (const {0}*){2}; int64_t k = 0;\n", T, out, in[0]);
    s += fmt::format("      for (int64_t i = 0; i < {}; ++i) o[i] = {};\n", op.out[0].size(),
                     literal(a.dtype, op.params.value));
    std::string idx = "0";
    for (std::size_t d = 0; d < a.ndim(); ++d) {
      s += fmt::format("      for (int64_t i{0} = 0; i{0} < {1}; ++i{0})\n", d, a.shape[d]);
      idx += fmt::format(" + ({} + i{}) * {}", op.params.lo[d], d, ost[d]);
    }
    return s + fmt::format("        o[{}] = x[k++];\n    }}", idx);
  }
  // concatenate
  const std::int64_t axis = op.params.axis;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= a.shape[i];
  for (std::size_t i = axis + 1; i < a.ndim(); ++i) inner *= a.shape[i];
  std::string s =
      fmt::format("{{ unsigned char* o = (unsigned char*){};\n      for (int64_t q = 0; q < {}; ++q) {{\n", out, outer);
  for (std::size_t k = 0; k < op.in.size(); ++k) {
    const std::size_t chunk = static_cast<std::size_t>(op.in[k].shape[axis] * inner) * dtype_size(a.dtype);
    if (chunk)
      s += fmt::format("        memcpy(o, (const unsigned char*){} + q * {}, {}); o += {};\n", in[k], chunk, chunk,
                       chunk);
  }
  return s + "      }\n    }";
}

std::string routine_call(const Op& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  if (op.prim == Prim::pad || op.prim == Prim::concatenate) return movement_call(op, in, out[0]);
  if (op.prim != Prim::cholesky && op.prim != Prim::lu && op.prim != Prim::triangular_solve)
    throw BackendError(fmt::format("native: {} in a scan body runs as a host loop", prim_name(op.prim)));
  const AVal& a = op.in[0];
  const std::int64_t n = a.shape.back();
  const std::int64_t batch = numel(Shape(a.shape.begin(), a.shape.end() - 2));
  const std::string S = a.dtype == DType::float32 ? "f" : "d", T = c_type(a.dtype);
  switch (op.prim) {
    case Prim::cholesky:
      return fmt::format("jx_chol_{}((const {}*){}, ({}*){}, {}, {});", S, T, in[0], T, out[0], n, batch);
    case Prim::lu:
      return fmt::format("jx_lu_{}((const {}*){}, ({}*){}, ({}*){}, ({}*){}, {}, {});", S, T, in[0], T, out[0], T,
                         out[1], T, out[2], n, batch);
    case Prim::triangular_solve: {
      const auto& p = op.params;
      const AVal& b = op.in[1];
      const std::int64_t k = p.left_side ? b.shape.back() : b.shape[b.ndim() - 2];
      return fmt::format("jx_trsm_{}((const {}*){}, (const {}*){}, ({}*){}, {}, {}, {}, {}, {}, {}, {});", S, T, in[0],
                         T, in[1], T, out[0], n, k, batch, int(p.left_side), int(p.lower), int(p.transpose_a),
                         int(p.unit_diagonal));
    }
    default: throw BackendError(fmt::format("native: no compiled-loop rendering for routine {}", prim_name(op.prim)));
  }
}

// Unrolled bodies: every kernel's element loops are expanded at render time, so each carry,
// staging copy, temporary and (small) constant is a typed local array indexed only by
// constants, which the C compiler scalarises into registers: a step is straight-line code with
// no memory traffic but the xs it reads and the ys it writes.
constexpr std::int64_t kUnrollStatements = 8192;  // node evaluations per step, summed over kernels
constexpr std::int64_t kLocalConstElems = 64;     // constants up to this size are copied to locals

std::int64_t unroll_cost(const Program& b) {
  std::int64_t cost = 0;
  for (const Kernel& k : b.kernels)
    cost += numel(k.space) * static_cast<std::int64_t>(k.reachable(k.body).size() +
                                                       (k.epilogue >= 0 ? k.reachable(k.epilogue).size() : 0));
  return cost;
}

// Kernel k with its inputs named `in` and its output the local array `out`. Row-major over the
// non-reduced dims, as render_kernel's loops. A float32 reduction of at most two terms
// accumulates in float: the double sum (or product) of two floats rounded once to float is the
// correctly rounded float result, so this equals the interpreter's double accumulation. Short
// float32 sums (float_accumulator) accumulate in float too, as render_kernel's do.
std::string unrolled_kernel(const Kernel& k, const std::vector<std::string>& in, const std::string& out,
                            const std::string& ind, bool from_first_term) {
  const SpaceSplit split = split_space(k);
  const auto& kept = split.kept;
  const auto& red = split.red;
  const std::int64_t nout = split.n_out, nred = split.n_in;
  // idx[d] for the dims `dims` from the row-major flat index f
  auto assign = [&](std::vector<std::string>& idx, const std::vector<std::size_t>& dims, std::int64_t f) {
    for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
      idx[*d] = fmt::format("{}", f % k.space[*d]);
      f /= k.space[*d];
    }
  };
  const auto body = k.reachable(k.body);
  const std::string in2 = ind + "  ";
  std::vector<std::string> idx(k.space.size(), "0");
  std::string s;
  for (std::int64_t o = 0; o < nout; ++o) {
    assign(idx, kept, o);
    s += ind + "{\n";
    if (!k.is_reduction()) {
      s += nodes_code(k, body, idx, in2, &in);
      s += fmt::format("{}{}[{}] = {};\n", in2, out, o, store(k.out.dtype, fmt::format("v{}", k.body)));
    } else {
      const bool f32 = (k.nodes[k.body].dtype == DType::float32 && nred <= 2) || float_accumulator(k, nred);
      const bool first = from_first_term && nred > 0;  // see loose_buffers
      s += fmt::format("{}{} acc{};\n", in2, f32 ? "float" : "double", first ? "" : " = " + reduce_identity(k));
      for (std::int64_t r = 0; r < nred; ++r) {
        assign(idx, red, r);
        const std::string v = (f32 ? "v" : "(double)v") + std::to_string(k.body);
        s += in2 + "{\n" + nodes_code(k, body, idx, in2 + "  ", &in);
        s += (first && r == 0 ? fmt::format("{}  acc = {};\n", in2, v) : reduce_update(k, v, in2 + "  ")) + in2 + "}\n";
      }
      s += reduce_finish(k, in2);
      if (k.epilogue >= 0) {
        for (auto d : red) idx[d] = "0";
        s += nodes_code(k, k.reachable(k.epilogue), idx, in2, &in);
        s += fmt::format("{}{}[{}] = {};\n", in2, out, o, store(k.out.dtype, fmt::format("v{}", k.epilogue)));
      } else {
        s += fmt::format("{}{}[{}] = {};\n", in2, out, o, reduce_store(k));
      }
    }
    s += ind + "}\n";
  }
  return s;
}

// Signs of zero in unrolled bodies. A float sum that starts from +0 (the interpreter's order)
// never yields −0, and its value does not depend on the signs of zero of its terms: adding ±0
// to a partial sum ≠ −0 leaves it unchanged. So a sum whose result is only used where the sign
// of a zero cannot matter may start from its first term instead (one add less on the path),
// its result differing from the interpreter's only where that is −0 for +0: call such values
// loose. add/sub/mul/neg and float conversions map values that differ only in signs of zero to
// values that do (0·inf is NaN either way), so a loose input read only through them leaves the
// reader's result loose, and exact if it reaches only the terms of a reader's from-+0 sum. A
// loop-carried value may be loose when every reader in the body tolerates it; it is made exact
// (+0 added: −0 + 0 = +0, all else unchanged) where it leaves the loop, as ys or final carry.
struct LooseUses {
  bool ok = true;          // only through add/sub/mul/neg/float convert
  bool terms_only = true;  // and only into the terms of the kernel's sum (not its epilogue)
};

bool sign_preserving(const Kernel& k, const KNode& n) {
  if (n.kind != KNodeKind::alu) return false;
  switch (n.prim) {
    case Prim::add:
    case Prim::sub:
    case Prim::mul:
    case Prim::neg: return true;
    case Prim::convert: return is_floating(n.dtype) && n.a >= 0 && is_floating(k.nodes[n.a].dtype);
    default: return false;
  }
}

// How kernel k uses the nodes `from` (and everything computed from them).
LooseUses loose_uses(const Kernel& k, const std::vector<char>& from) {
  std::vector<char> dep = from;
  LooseUses u;
  for (std::size_t i = 0; i < k.nodes.size(); ++i) {  // nodes are in topological order
    const KNode& n = k.nodes[i];
    const bool load_index = n.kind == KNodeKind::load && k.loads[n.load].indexed && n.a >= 0 && dep[n.a];
    const bool uses =
        n.kind == KNodeKind::alu && ((n.a >= 0 && dep[n.a]) || (n.b >= 0 && dep[n.b]) || (n.c >= 0 && dep[n.c]));
    if (load_index || (uses && !sign_preserving(k, n))) u.ok = false;
    if (uses) dep[i] = 1;
  }
  const bool float_sum = k.is_reduction() && k.reduce_op == Prim::reduce_sum && is_floating(k.nodes[k.body].dtype);
  if (!float_sum) u.terms_only = false;
  if (k.epilogue >= 0)
    for (int i : k.reachable(k.epilogue))
      if (dep[i]) u.terms_only = false;
  if (!k.is_reduction() && dep[k.body]) u.terms_only = false;
  return u;
}

// A reduce_sum whose epilogue passes the sum on only through sign-preserving nodes: started from
// its first term, its output is loose.
bool can_start_from_first_term(const Kernel& k) {
  if (!k.is_reduction() || k.reduce_op != Prim::reduce_sum || !is_floating(k.nodes[k.body].dtype)) return false;
  if (k.epilogue < 0) return true;
  std::vector<char> acc(k.nodes.size(), 0);
  for (std::size_t i = 0; i < k.nodes.size(); ++i)
    if (k.nodes[i].kind == KNodeKind::reduce_result) acc[i] = 1;
  return loose_uses(k, acc).ok;
}

// Whether kernel k's output is never −0 in the interpreter (whatever the sign of zero of its
// loose inputs): a from-+0 sum, an add with such an operand, a constant that is not −0, an input
// buffer known to be never −0.
bool never_minus_zero(const Kernel& k, const std::vector<char>& input_nnz) {
  std::vector<char> nnz(k.nodes.size(), 0);
  for (std::size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode& n = k.nodes[i];
    switch (n.kind) {
      case KNodeKind::load: nnz[i] = input_nnz[static_cast<std::size_t>(k.loads[n.load].buffer)]; break;
      case KNodeKind::constant: nnz[i] = !(n.value == 0.0 && std::signbit(n.value)); break;
      case KNodeKind::reduce_result: nnz[i] = k.reduce_op == Prim::reduce_sum; break;
      case KNodeKind::iota: nnz[i] = 1; break;
      case KNodeKind::alu:
        nnz[i] = (n.prim == Prim::add && (nnz[n.a] || nnz[n.b])) || (n.prim == Prim::convert && nnz[n.a]);
        break;
    }
  }
  if (k.is_reduction()) return k.epilogue >= 0 ? nnz[k.epilogue] : k.reduce_op == Prim::reduce_sum;
  return nnz[k.body];
}

// loose[u] for every body buffer: the greatest set of kernel-written buffers (and carries) whose
// every reader tolerates a loose value. A carry qualifies only when the interpreter's next value
// is never −0, so that +0 added where it leaves the loop restores it exactly.
std::vector<char> loose_buffers(const ScanProgram& sp) {
  const Program& b = sp.body;
  const std::size_t nc = sp.num_consts, nk = sp.num_carry, nin = b.num_inputs;
  std::vector<char> loose(b.buffers.size(), 0);
  std::vector<int> producer(b.buffers.size(), -1), count(b.buffers.size(), 0);
  for (std::size_t s = 0; s < b.steps.size(); ++s)
    if (b.steps[s].kind == Step::Kind::kernel)
      producer[static_cast<std::size_t>(b.steps[s].out[0])] = static_cast<int>(s);
  for (int o : b.outputs) ++count[static_cast<std::size_t>(o)];
  std::vector<int> partner(b.buffers.size(), -1);  // carry-in <-> carry-out
  for (std::size_t u = nin; u < b.buffers.size(); ++u) loose[u] = producer[u] >= 0 && count[u] == 0;
  std::vector<char> nnz(b.buffers.size(), 0);  // the interpreter's value is never −0
  for (const Step& st : b.steps)
    if (st.kind == Step::Kind::kernel) {
      std::vector<char> in;
      for (int x : st.in) in.push_back(nnz[static_cast<std::size_t>(x)]);
      nnz[static_cast<std::size_t>(st.out[0])] = never_minus_zero(b.kernels[st.index], in);
    }
  std::vector<char> carried_on(nin, 0);  // an input that is itself some carry's next value
  for (std::size_t k = 0; k < nk; ++k)
    if (static_cast<std::size_t>(b.outputs[k]) < nin) carried_on[static_cast<std::size_t>(b.outputs[k])] = 1;
  for (std::size_t k = 0; k < nk; ++k) {
    const auto out = static_cast<std::size_t>(b.outputs[k]);
    if (out >= nin && producer[out] >= 0 && count[out] == 1 && is_floating(b.buffers[out].dtype) &&
        !carried_on[nc + k] && nnz[out]) {
      loose[out] = loose[nc + k] = 1;
      partner[out] = static_cast<int>(nc + k);
      partner[nc + k] = static_cast<int>(out);
    }
  }
  // every kernel input's uses, computed once: the fixpoint below only re-reads them
  struct Read {
    std::size_t buffer, out;
    LooseUses use;
  };
  std::vector<Read> reads;
  for (const Step& st : b.steps) {
    if (st.kind != Step::Kind::kernel) continue;
    const Kernel& k = b.kernels[st.index];
    for (std::size_t i = 0; i < st.in.size(); ++i) {
      std::vector<char> from(k.nodes.size(), 0);
      for (std::size_t n = 0; n < k.nodes.size(); ++n)
        if (k.nodes[n].kind == KNodeKind::load && static_cast<std::size_t>(k.loads[k.nodes[n].load].buffer) == i)
          from[n] = 1;
      reads.push_back({static_cast<std::size_t>(st.in[i]), static_cast<std::size_t>(st.out[0]), loose_uses(k, from)});
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Read& r : reads) {
      if (!loose[r.buffer] || (r.use.ok && (r.use.terms_only || loose[r.out]))) continue;
      loose[r.buffer] = 0;
      if (partner[r.buffer] >= 0) loose[static_cast<std::size_t>(partner[r.buffer])] = 0;
      changed = true;
    }
  }
  return loose;
}

std::string render_scan_unrolled(const ScanProgram& sp, const std::string& name, int* first_term_sums) {
  const Program& b = sp.body;
  const std::size_t nc = sp.num_consts, nk = sp.num_carry, nin = b.num_inputs, nx = nin - nc - nk;
  const std::size_t ny = b.outputs.size() - nk;
  auto T = [&](std::size_t u) { return c_type(b.buffers[u].dtype); };
  auto elems = [&](std::size_t u) { return b.buffers[u].size(); };
  auto local_const = [&](std::size_t u) { return elems(u) <= kLocalConstElems; };
  auto name_of = [&](int buf) -> std::string {
    const std::size_t u = static_cast<std::size_t>(buf);
    if (u < nc) return local_const(u) ? fmt::format("k{}", u) : fmt::format("((const {}*)in_[{}])", T(u), u);
    if (u < nc + nk) return fmt::format("c{}", u - nc);
    if (u < nin) return fmt::format("x{}", u - nc - nk);
    return fmt::format("t{}", u);
  };
  // dst[e] = src[e] for every element (unrolled: the arrays stay scalarisable); exact adds +0
  // to a loose value leaving the loop
  auto copy = [](const std::string& dst, const std::string& src, std::int64_t n, const std::string& ind,
                 const std::string& exact = "") {
    std::string s;
    for (std::int64_t e = 0; e < n; ++e) {
      const std::string v = fmt::format("{}[{}]", src, e);
      s += fmt::format("{}{}[{}] = {};\n", ind, dst, e,
                       exact.empty() ? v : fmt::format("{0} ? {1} + 0.0f : {1}", exact, v));
    }
    return s;
  };
  const std::vector<char> loose = loose_buffers(sp);
  std::string s = fmt::format("void {}(const void* const* in_, void* const* out_) {{\n", name);
  auto decl = [&](const std::string& var, std::size_t u) {
    s += fmt::format("  {} {}[{}];\n", T(u), var, std::max<std::int64_t>(elems(u), 1));
  };
  for (std::size_t u = 0; u < nc; ++u)
    if (local_const(u)) {
      decl(fmt::format("k{}", u), u);
      s += copy(fmt::format("k{}", u), fmt::format("((const {}*)in_[{}])", T(u), u), elems(u), "  ");
    }
  for (std::size_t k = 0; k < nk; ++k) {
    decl(fmt::format("c{}", k), nc + k);
    decl(fmt::format("st{}", k), nc + k);
    s += copy(fmt::format("c{}", k), fmt::format("((const {}*)in_[{}])", T(nc + k), nc + k), elems(nc + k), "  ");
  }
  for (std::size_t t = nin; t < b.buffers.size(); ++t) decl(fmt::format("t{}", t), t);
  s += fmt::format("  for (int64_t it = 0; it < {}; ++it) {{\n", sp.length);
  s += fmt::format("    const int64_t t = {};\n", sp.reverse ? fmt::format("{} - 1 - it", sp.length) : "it");
  for (std::size_t j = 0; j < nx; ++j) {
    const std::size_t u = nc + nk + j;
    s += fmt::format("    const {0}* x{1} = (const {0}*)in_[{2}] + t * {3};\n", T(u), j, u, elems(u));
  }
  for (const Step& st : b.steps) {
    if (st.kind != Step::Kind::kernel) continue;  // no routines here; frees are no-ops for locals
    std::vector<std::string> in;
    for (int x : st.in) in.push_back(name_of(x));
    s += fmt::format("    // {}\n", b.kernels[st.index].name);
    const Kernel& k = b.kernels[st.index];
    const bool first = loose[static_cast<std::size_t>(st.out[0])] && can_start_from_first_term(k);
    if (first && first_term_sums) ++*first_term_sums;
    s += unrolled_kernel(k, in, name_of(st.out[0]), "    ", first);
  }
  for (std::size_t j = 0; j < ny; ++j) {  // ys[t] before the carries change
    const std::size_t u = static_cast<std::size_t>(b.outputs[nk + j]);
    s += copy(fmt::format("(({}*)out_[{}] + t * {})", T(u), nk + j, elems(u)), name_of(b.outputs[nk + j]), elems(u),
              "    ", loose[u] ? "it > 0" : "");
  }
  for (std::size_t k = 0; k < nk; ++k) s += copy(fmt::format("st{}", k), name_of(b.outputs[k]), elems(nc + k), "    ");
  for (std::size_t k = 0; k < nk; ++k) s += copy(fmt::format("c{}", k), fmt::format("st{}", k), elems(nc + k), "    ");
  s += "  }\n";
  for (std::size_t k = 0; k < nk; ++k)
    s += copy(fmt::format("(({}*)out_[{}])", T(nc + k), k), fmt::format("c{}", k), elems(nc + k), "  ",
              loose[nc + k] && sp.length > 0 ? "1" : "");
  return s + "}\n";
}

}  // namespace

std::string render_scan(const ScanProgram& sp, const std::string& name, bool* unrolled, int* first_term_sums) {
  const Program& b = sp.body;
  for (const Step& st : b.steps)
    if (st.kind == Step::Kind::control) throw BackendError("native: nested scans in a scan body run as host loops");
  for (const Op& op : b.routines)
    if (op.prim == Prim::lu && op.in[0].shape.back() > 64)
      throw BackendError("native: lu of matrices larger than 64 in a scan body runs as a host loop");
  const std::size_t nc = sp.num_consts, nk = sp.num_carry, nin = b.num_inputs, nx = nin - nc - nk;
  const std::size_t ny = b.outputs.size() - nk;
  const bool unroll = b.routines.empty() && unroll_cost(b) <= kUnrollStatements;
  if (unrolled) *unrolled = unroll;
  if (unroll) return render_scan_unrolled(sp, name, first_term_sums);
  std::string s = kRoutines;
  for (std::size_t i = 0; i < b.kernels.size(); ++i)
    s += render_kernel(b.kernels[i], fmt::format("{}_k{}", name, i), true) + "\n";
  s += fmt::format("void {}(const void* const* in_, void* const* out_) {{\n", name);
  // storage: carries, carry staging, temporaries (stack when small, else one heap block)
  std::size_t local = 0;
  for (std::size_t k = 0; k < nk; ++k) local += 2 * ((b.buffers[nc + k].bytes() + 63) / 64 * 64);
  for (std::size_t t = nin; t < b.buffers.size(); ++t) local += (b.buffers[t].bytes() + 63) / 64 * 64;
  const bool heap = local > (std::size_t{128} << 10);
  if (heap)
    s += fmt::format("  unsigned char* heap = (unsigned char*)aligned_alloc(64, {});\n  if (!heap) return;\n",
                     std::max<std::size_t>(local, 64));
  else
    s += fmt::format("  unsigned char heap[{}] __attribute__((aligned(64)));\n", std::max<std::size_t>(local, 64));
  std::size_t off = 0;
  auto region = [&](const std::string& var, std::size_t bytes) {
    s += fmt::format("  unsigned char* {} = heap + {};\n", var, off);
    off += (bytes + 63) / 64 * 64;
  };
  for (std::size_t k = 0; k < nk; ++k) {
    region(fmt::format("c{}", k), b.buffers[nc + k].bytes());
    region(fmt::format("st{}", k), b.buffers[nc + k].bytes());
    s += fmt::format("  memcpy(c{0}, in_[{1}], {2});\n", k, nc + k, b.buffers[nc + k].bytes());
  }
  for (std::size_t t = nin; t < b.buffers.size(); ++t) region(fmt::format("t{}", t), b.buffers[t].bytes());
  auto ptr = [&](int buf) -> std::string {
    const std::size_t u = static_cast<std::size_t>(buf);
    if (u < nc) return fmt::format("(const void*)in_[{}]", u);
    if (u < nc + nk) return fmt::format("(void*)c{}", u - nc);
    if (u < nin) return fmt::format("(void*)x{}", u - nc - nk);
    return fmt::format("(void*)t{}", u);
  };
  s += fmt::format("  for (int64_t it = 0; it < {}; ++it) {{\n", sp.length);
  s += fmt::format("    const int64_t t = {};\n", sp.reverse ? fmt::format("{} - 1 - it", sp.length) : "it");
  for (std::size_t j = 0; j < nx; ++j)
    s += fmt::format("    const unsigned char* x{0} = (const unsigned char*)in_[{1}] + t * {2};\n", j, nc + nk + j,
                     b.buffers[nc + nk + j].bytes());
  for (const Step& st : b.steps) {
    if (st.kind == Step::Kind::free) continue;
    std::vector<std::string> in, out;
    for (int x : st.in) in.push_back(ptr(x));
    for (int x : st.out) out.push_back(ptr(x));
    if (st.kind == Step::Kind::kernel) {
      s += "    {\n      const void* a[] = {";
      for (auto& p : in) s += p + ", ";
      s += "0};\n      void* o[] = {" + out[0] + "};\n";
      s += fmt::format("      {}_k{}(a, o);\n    }}\n", name, st.index);
    } else {
      s += "    " + routine_call(b.routines[st.index], in, out) + "\n";
    }
  }
  for (std::size_t j = 0; j < ny; ++j) {  // ys[t] before the carries change
    const int buf = b.outputs[nk + j];
    s += fmt::format("    memcpy((unsigned char*)out_[{}] + t * {}, {}, {});\n", nk + j, b.buffers[buf].bytes(),
                     ptr(buf), b.buffers[buf].bytes());
  }
  for (std::size_t k = 0; k < nk; ++k)
    s += fmt::format("    memcpy(st{}, {}, {});\n", k, ptr(b.outputs[k]), b.buffers[nc + k].bytes());
  for (std::size_t k = 0; k < nk; ++k)
    s += fmt::format("    memcpy(c{0}, st{0}, {1});\n", k, b.buffers[nc + k].bytes());
  s += "  }\n";
  for (std::size_t k = 0; k < nk; ++k)
    s += fmt::format("  memcpy(out_[{0}], c{0}, {1});\n", k, b.buffers[nc + k].bytes());
  if (heap) s += "  free(heap);\n";
  return s + "}\n";
}

}  // namespace jx::native
