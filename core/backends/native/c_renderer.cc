#include "core/backends/native/c_renderer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/backends/cstyle.h"
#include "core/base/env.h"
#include "core/base/errors.h"
#include "core/instrument/faults.h"

namespace jx::native {

SpaceSplit split_space(const Kernel& k) {
  SpaceSplit sp;
  for (std::size_t d = 0; d < k.space.size(); ++d) {
    const bool red =
        std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
    (red ? sp.red : sp.kept).push_back(d);
    (red ? sp.n_in : sp.n_out) *= k.space[d];
  }
  return sp;
}

std::string c_type(DType d) {
  switch (d) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int32_t";
    case DType::bool_: return "uint8_t";
  }
  return "void";
}

std::string c_prelude() {
  return R"(#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static inline double jx_maxd(double a, double b) { return a != a ? a : b != b ? b : (a > b ? a : b); }
static inline double jx_mind(double a, double b) { return a != a ? a : b != b ? b : (a < b ? a : b); }
static inline float jx_maxf(float a, float b) { return a != a ? a : b != b ? b : (a > b ? a : b); }
static inline float jx_minf(float a, float b) { return a != a ? a : b != b ? b : (a < b ? a : b); }
static inline int32_t jx_maxi(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t jx_mini(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t jx_addi(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t jx_subi(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
static inline int32_t jx_muli(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
static inline int64_t jx_clamp(int64_t i, int64_t hi) { return i < 0 ? 0 : i > hi ? hi : i; }
static inline int32_t jx_f2i(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return 2147483647;
  if (v <= -2147483648.0) return (int32_t)(-2147483647 - 1);
  return (int32_t)v;
}
static inline int32_t jx_d2i_wrap(double v) { return (int32_t)(uint32_t)(int64_t)v; }
)";
}

std::string literal(DType d, double v) {
  if (std::isnan(v)) return d == DType::float32 ? "NAN" : "(double)NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  switch (d) {
    case DType::float32: return fmt::format("((float){:a})", v);  // hex floats are exact
    case DType::float64: return fmt::format("({:a})", v);
    case DType::int32: return fmt::format("((int32_t){})", static_cast<long long>(v));
    case DType::bool_: return v != 0.0 ? "((uint8_t)1)" : "((uint8_t)0)";
  }
  return "0";
}

namespace {

// C99: the C-style renderer (core/backends/cstyle.h) with C's casts, libm's float/double names,
// the prelude's wrapping int32 helpers and NaN-propagating max/min per type.
class CLanguage final : public CStyleLanguage {
 public:
  explicit CLanguage(const std::vector<std::string>* in_names) : in_names_(in_names) {}
  std::string type(DType d) const override { return c_type(d); }
  std::string literal(DType d, double v) const override { return native::literal(d, v); }
  std::string cast(DType d, const std::string& e, bool atom) const override {
    return atom ? fmt::format("({}){}", c_type(d), e) : fmt::format("({})({})", c_type(d), e);
  }
  std::string load(const Kernel&, const KLoad& l, const KNode& n, const std::string& off) const override {
    const std::string in = in_names_ ? (*in_names_)[static_cast<std::size_t>(l.buffer)] : fmt::format("in{}", l.buffer);
    return cast(n.dtype, fmt::format("{}[{}]", in, off), true);
  }
  std::string clamp(const std::string& off, std::int64_t hi) const override {
    return fmt::format("jx_clamp({}, {})", off, hi);
  }
  std::string index_value(int node) const override { return "(int64_t)" + var(node); }
  std::string truthy(DType d, const std::string& v) const override {
    return d == DType::bool_ ? v : fmt::format("({} != 0)", v);
  }
  std::string op(const Kernel& k, const KNode& n) const override {
    const DType in = operand_dtype(k, n);
    const bool f32 = in == DType::float32, flt = is_floating(in), i32 = in == DType::int32;
    const std::string a = var(n.a), b = var(n.b), fs = f32 ? "f" : "";
    switch (n.prim) {
      case Prim::neg: return i32 ? fmt::format("jx_subi(0, {})", a) : "-" + a;
      case Prim::abs:
        return i32 ? fmt::format("({0} < 0 ? jx_subi(0, {0}) : {0})", a) : fmt::format("fabs{}({})", fs, a);
      case Prim::sign:
        return flt ? fmt::format("({0} != {0} ? {0} : {0} > 0 ? 1 : {0} < 0 ? -1 : 0)", a)
                   : fmt::format("({0} > 0 ? 1 : {0} < 0 ? -1 : 0)", a);
      case Prim::exp:
      case Prim::log:
      case Prim::log1p:
      case Prim::sqrt:
      case Prim::sin:
      case Prim::cos: return fmt::format("{}{}({})", prim_name(n.prim), fs, a);
      case Prim::tanh:  // the fault plants a wrong answer (for the reducer's and fuzzer's tests)
        return faults::fire("native_wrong_tanh") ? fmt::format("(tanh{}({}) + 0.25{})", fs, a, fs)
                                                 : fmt::format("tanh{}({})", fs, a);
      case Prim::isnan: return flt ? fmt::format("({0} != {0})", a) : "0";
      case Prim::isfinite: return flt ? fmt::format("(isfinite({}) != 0)", a) : "1";
      case Prim::add:
      case Prim::sub:
      case Prim::mul: return i32 ? fmt::format("jx_{}i({}, {})", prim_name(n.prim), a, b) : CStyleLanguage::op(k, n);
      case Prim::pow: return fmt::format("pow{}({}, {})", fs, a, b);
      case Prim::max:
      case Prim::min: return fmt::format("jx_{}{}({}, {})", prim_name(n.prim), f32 ? "f" : flt ? "d" : "i", a, b);
      default: return CStyleLanguage::op(k, n);
    }
  }

 private:
  const std::vector<std::string>* in_names_;
};

}  // namespace

std::string nodes_code(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx,
                       const std::string& ind, const std::vector<std::string>* in_names) {
  return CLanguage(in_names).nodes(k, order, idx, ind);
}

std::string store(DType d, const std::string& v) {
  if (d == DType::bool_) return fmt::format("(uint8_t)({} != 0)", v);
  return fmt::format("({}){}", c_type(d), v);
}

std::string reduce_identity(const Kernel& k) {
  return k.reduce_op == Prim::reduce_sum    ? "0.0"
         : k.reduce_op == Prim::reduce_prod ? "1.0"
         : k.reduce_op == Prim::reduce_max  ? "-INFINITY"
                                            : "INFINITY";
}

std::string reduce_update(const Kernel& k, const std::string& v, const std::string& ind) {
  switch (k.reduce_op) {
    case Prim::reduce_sum: return fmt::format("{}acc += {};\n", ind, v);
    case Prim::reduce_prod:
      return is_floating(k.nodes[k.body].dtype)
                 ? fmt::format("{}acc *= {};\n", ind, v)
                 : fmt::format("{}acc = (double)((int64_t)acc * (int64_t){});\n", ind, v);
    default:  // max/min: NaN propagates, as in the interpreter
      return fmt::format("{0}if (acc == acc && ({1} != {1} || {1} {2} acc)) acc = {1};\n", ind, v,
                         k.reduce_op == Prim::reduce_max ? ">" : "<");
  }
}

std::string reduce_finish(const Kernel& k, const std::string& ind) {
  const DType bd = k.nodes[k.body].dtype;
  std::string s;
  if (!is_floating(bd) && (k.reduce_op == Prim::reduce_max || k.reduce_op == Prim::reduce_min))
    s += fmt::format("{}if (isinf(acc)) acc = 0.0;\n", ind);
  // round the accumulator to the body dtype, as the interpreter does
  if (bd == DType::float32)
    s += fmt::format("{}acc = (double)(float)acc;\n", ind);
  else if (bd == DType::int32)
    s += fmt::format("{}acc = (double)jx_d2i_wrap(acc);\n", ind);
  else if (bd == DType::bool_)
    s += fmt::format("{}acc = acc != 0.0;\n", ind);
  return s;
}

std::string reduce_store(const Kernel& k) {
  return k.out.dtype == DType::int32 ? "jx_d2i_wrap(acc)" : store(k.out.dtype, "acc");
}

bool float_accumulator(const Kernel& k, std::int64_t terms) {
  static const bool on = !env_is_zero("JX_NATIVE_F32_ACC");
  return on && k.reduce_op == Prim::reduce_sum && k.nodes[k.body].dtype == DType::float32 && short_f32_sum(terms);
}

namespace {
// The accumulator's C type and a term as added to it.
const char* acc_type(bool f32) { return f32 ? "float" : "double"; }
std::string acc_term(const Kernel& k, bool f32) { return fmt::format("{}v{}", f32 ? "" : "(double)", k.body); }

// One kernel's C text as it is written: the text so far and the current indentation.
struct KernelText {
  const Kernel& k;
  std::string s;
  std::string ind = "  ";
  void open(const std::vector<std::size_t>& dims) {
    for (auto d : dims) {
      s += fmt::format("{0}for (int64_t i{1} = 0; i{1} < {2}; ++i{1}) {{\n", ind, d, k.space[d]);
      ind += "  ";
    }
  }
  void close(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      ind.resize(ind.size() - 2);
      s += ind + "}\n";
    }
  }
  // the kept dims' loops, perfectly nested (collapsible); o is the row-major output index
  void open_kept(const std::vector<std::size_t>& kept, bool par_out) {
    if (par_out && !kept.empty())
      s += fmt::format("{}#pragma omp parallel for collapse({}) schedule(static)\n", ind, kept.size());
    open(kept);
    std::string o = "0";
    std::int64_t stride = 1;
    for (auto d = kept.rbegin(); d != kept.rend(); ++d) {
      o += fmt::format(" + {}*i{}", stride, *d);
      stride *= k.space[*d];
    }
    s += fmt::format("{}const int64_t o = {};\n", ind, o);
  }
};

// A reduction's terms in blocks: evaluated in parallel (the flat term index r gives the reduced
// dims' indices), accumulated in order; without scratch memory the loop runs on one thread.
void terms_in_blocks(KernelText& w, const SpaceSplit& split, const std::vector<int>& body,
                     const std::vector<std::string>& idx) {
  const Kernel& k = w.k;
  std::string& s = w.s;
  std::string& ind = w.ind;
  s += fmt::format(
      "{0}for (int64_t b0 = 0; b0 < {1}; b0 += {2}) {{\n{0}  const int64_t nb = {1} - b0 < {2} ? {1} - b0 : {2};\n",
      ind, split.n_in, kParallelBlock);
  ind += "  ";
  s += fmt::format("{}#pragma omp parallel for schedule(static) if (terms != 0)\n", ind);
  s += fmt::format("{}for (int64_t r = b0; r < b0 + nb; ++r) {{\n", ind);
  std::int64_t stride = 1;
  std::string idx_code;
  for (auto d = split.red.rbegin(); d != split.red.rend(); ++d) {
    idx_code = fmt::format("{}  const int64_t i{} = r / {} % {};\n", ind, *d, stride, k.space[*d]) + idx_code;
    stride *= k.space[*d];
  }
  s += idx_code + nodes_code(k, body, idx, ind + "  ");
  s += fmt::format("{0}  if (terms) terms[r - b0] = (double)v{1};\n{0}  else {{\n{2}{0}  }}\n{0}}}\n", ind, k.body,
                   reduce_update(k, fmt::format("(double)v{}", k.body), ind + "    "));
  s += fmt::format("{}if (terms)\n{}  for (int64_t r = 0; r < nb; ++r) {{\n", ind, ind);
  s += reduce_update(k, "terms[r]", ind + "    ") + ind + "  }\n";
  w.close(1);
}

// An output's reduction finished: acc rounded to the body's dtype, the epilogue (the reduced
// dims' indices 0) and the store into out[o].
void reduce_output(KernelText& w, const SpaceSplit& split, const std::vector<std::string>& idx) {
  const Kernel& k = w.k;
  w.s += reduce_finish(k, w.ind);
  if (k.epilogue >= 0) {
    std::vector<std::string> eidx = idx;
    for (auto d : split.red) eidx[d] = "0";
    w.s += nodes_code(k, k.reachable(k.epilogue), eidx, w.ind);
    w.s += fmt::format("{}out[o] = {};\n", w.ind, store(k.out.dtype, fmt::format("v{}", k.epilogue)));
  } else {
    w.s += fmt::format("{}out[o] = {};\n", w.ind, reduce_store(k));
  }
}

constexpr std::int64_t kRowOutputs = 64;

// Rows at once: R rows of the next output dim (n of them, R dividing n) accumulated side by side,
// R independent chains of additions instead of one (a small matrix product's adds wait on each
// other otherwise: 16 dependent vector adds per row at m = 16); 1 where no R applies.
std::int64_t row_group(const Kernel& k, const std::vector<std::size_t>& outer, std::int64_t L, bool par_out) {
  if (par_out || outer.empty()) return 1;
  const std::int64_t n = k.space[outer.back()];
  for (std::int64_t R : {4, 2})
    if (n % R == 0 && R * L <= kRowOutputs) return R;
  return 1;
}

// The reduction with its innermost output dim (L <= kRowOutputs outputs, stride 1) inside the
// reduced loops: a row of L accumulators (R rows of them, row_group), each still adding its terms
// in the interpreter's order (bit for bit its results where the accumulator is double:
// float_accumulator), while the loop over the row vectorizes (a small matrix product's outputs, a
// sum over a leading axis). False where it does not apply.
bool reduction_rows(KernelText& w, const SpaceSplit& split, const std::vector<int>& body,
                    const std::vector<std::string>& idx, bool par_out) {
  const Kernel& k = w.k;
  if (split.kept.empty() || split.red.empty()) return false;
  const std::size_t dl = split.kept.back();
  const std::int64_t L = k.space[dl];
  std::vector<std::size_t> outer(split.kept.begin(), split.kept.end() - 1);
  const std::int64_t R = row_group(k, outer, L, par_out);
  if ((L < 2 && R < 2) || L > kRowOutputs || (par_out && outer.empty())) return false;
  std::string& s = w.s;
  if (par_out) s += fmt::format("{}#pragma omp parallel for collapse({}) schedule(static)\n", w.ind, outer.size());
  std::vector<std::string> ridx = idx;  // the indices of row u of the group
  if (R > 1) {
    const std::size_t g = outer.back();
    outer.pop_back();
    w.open(outer);
    s += fmt::format("{0}for (int64_t i{1} = 0; i{1} < {2}; i{1} += {3}) {{\n", w.ind, g, k.space[g], R);
    w.ind += "  ";
    outer.push_back(g);
    ridx[g] = fmt::format("(i{} + u)", g);
  } else {
    w.open(outer);
  }
  std::string o0 = "0";
  std::int64_t stride = L;
  for (auto d = outer.rbegin(); d != outer.rend(); ++d) {
    o0 += fmt::format(" + {}*i{}", stride, *d);
    stride *= k.space[*d];
  }
  const std::string row = fmt::format("for (int64_t i{0} = 0; i{0} < {1}; ++i{0})", dl, L);
  const std::string rows = R > 1 ? fmt::format("for (int64_t u = 0; u < {}; ++u) ", R) : "const int64_t u = 0;\n";
  const std::string at = fmt::format("u * {} + i{}", L, dl);
  const bool f32 = float_accumulator(k, split.n_in);
  s += fmt::format(
      "{0}const int64_t o0 = {1};\n{0}{4} accs[{2}];\n{0}for (int64_t a = 0; a < {2}; ++a) accs[a] = {3};\n", w.ind, o0,
      R * L, reduce_identity(k), acc_type(f32));
  w.open(split.red);
  s += fmt::format("{0}{{\n{0}{1}{2} {{\n{0}  {4} acc = accs[{3}];\n", w.ind, rows, row, at, acc_type(f32));
  s += nodes_code(k, body, ridx, w.ind + "  ");
  s += reduce_update(k, acc_term(k, f32), w.ind + "  ");
  s += fmt::format("{0}  accs[{1}] = acc;\n{0}}}\n{0}}}\n", w.ind, at);
  w.close(split.red.size());
  s += fmt::format("{0}{{\n{0}{1}{2} {{\n{0}  const int64_t o = o0 + {3};\n{0}  double acc = accs[{3}];\n", w.ind, rows,
                   row, at);
  w.ind += "  ";
  reduce_output(w, split, ridx);
  w.close(1);
  s += w.ind + "}\n";
  w.close(outer.size());
  return true;
}
}  // namespace

// Threads (OpenMP, where the compiler has it) split a kernel only along what the interpreter
// does independently: output elements, each written once, and the terms of a reduction, which
// are evaluated in parallel into a scratch block and then accumulated by one thread in the
// interpreter's order. Results are therefore bit for bit those of the one-thread loop.
std::string render_kernel(const Kernel& k, const std::string& name, bool is_static, bool parallel) {
  KernelText w{k, fmt::format("// {}\n{}void {}(const void* const* in_, void* const* out_) {{\n", k.name,
                              is_static ? "static inline " : "", name)};
  std::string& s = w.s;
  for (std::size_t i = 0; i < k.inputs.size(); ++i)
    s += fmt::format("  const {0}* restrict in{1} = (const {0}*)in_[{1}];\n", c_type(k.inputs[i].dtype), i);
  s += fmt::format("  {0}* restrict out = ({0}*)out_[0];\n", c_type(k.out.dtype));
  std::vector<std::string> idx;
  for (std::size_t d = 0; d < k.space.size(); ++d) idx.push_back(fmt::format("i{}", d));
  const SpaceSplit split = split_space(k);
  const std::int64_t n_out = split.n_out, n_in = split.n_in;
  const bool big = parallel && n_out * n_in >= kParallelElements;
  // over the outputs when there are enough of them; else over each output's terms
  const bool par_out = big && n_out >= kParallelMinOutputs, par_terms = big && !par_out && k.is_reduction();
  if (!k.is_reduction()) {
    w.open_kept(split.kept, par_out);
    s += nodes_code(k, k.reachable(k.body), idx, w.ind);
    s += fmt::format("{}out[o] = {};\n", w.ind, store(k.out.dtype, fmt::format("v{}", k.body)));
    w.close(split.kept.size());
    return s + "}\n";
  }
  const auto body = k.reachable(k.body);
  if (!par_terms && reduction_rows(w, split, body, idx, par_out)) return s + "}\n";
  if (par_terms)
    s += fmt::format("  double* terms = (double*)malloc(sizeof(double) * {});\n", std::min(n_in, kParallelBlock));
  w.open_kept(split.kept, par_out);
  const bool f32 = !par_terms && float_accumulator(k, n_in);
  s += fmt::format("{}{} acc = {};\n", w.ind, acc_type(f32), reduce_identity(k));
  if (par_terms) {
    terms_in_blocks(w, split, body, idx);
  } else {
    w.open(split.red);
    s += nodes_code(k, body, idx, w.ind);
    s += reduce_update(k, acc_term(k, f32), w.ind);
    w.close(split.red.size());
  }
  reduce_output(w, split, idx);
  w.close(split.kept.size());
  if (par_terms) s += "  free(terms);\n";
  return s + "}\n";
}

}  // namespace jx::native
