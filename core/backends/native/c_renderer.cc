#include "core/backends/native/c_renderer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/array/errors.h"

namespace jx::native {

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

namespace {

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


std::string alu_expr(const Kernel& k, const KNode& n) {
  const auto v = [](int i) { return fmt::format("v{}", i); };
  const DType in = n.prim == Prim::select ? k.nodes[n.b].dtype : k.nodes[n.a].dtype;
  const bool f32 = in == DType::float32, flt = is_floating(in), i32 = in == DType::int32;
  const std::string a = v(n.a), b = n.b >= 0 ? v(n.b) : "", c = n.c >= 0 ? v(n.c) : "";
  const std::string fs = f32 ? "f" : "";
  switch (n.prim) {
    case Prim::neg: return i32 ? fmt::format("jx_subi(0, {})", a) : fmt::format("-{}", a);
    case Prim::abs: return i32 ? fmt::format("({0} < 0 ? jx_subi(0, {0}) : {0})", a) : fmt::format("fabs{}({})", fs, a);
    case Prim::sign:
      return flt ? fmt::format("({0} != {0} ? {0} : {0} > 0 ? 1 : {0} < 0 ? -1 : 0)", a) : fmt::format("({0} > 0 ? 1 : {0} < 0 ? -1 : 0)", a);
    case Prim::exp: return fmt::format("exp{}({})", fs, a);
    case Prim::log: return fmt::format("log{}({})", fs, a);
    case Prim::log1p: return fmt::format("log1p{}({})", fs, a);
    case Prim::sqrt: return fmt::format("sqrt{}({})", fs, a);
    case Prim::sin: return fmt::format("sin{}({})", fs, a);
    case Prim::cos: return fmt::format("cos{}({})", fs, a);
    case Prim::tanh: return fmt::format("tanh{}({})", fs, a);
    case Prim::logical_not: return fmt::format("({} == 0)", a);
    case Prim::isnan: return flt ? fmt::format("({0} != {0})", a) : "0";
    case Prim::isfinite: return flt ? fmt::format("(isfinite({}) != 0)", a) : "1";
    case Prim::stop_gradient: return a;
    case Prim::convert:
      if (n.dtype == DType::int32) return flt ? fmt::format("jx_f2i({})", a) : fmt::format("(int32_t){}", a);
      if (n.dtype == DType::bool_) return fmt::format("({} != 0)", a);
      return fmt::format("({}){}", c_type(n.dtype), a);
    case Prim::add: return i32 ? fmt::format("jx_addi({}, {})", a, b) : fmt::format("{} + {}", a, b);
    case Prim::sub: return i32 ? fmt::format("jx_subi({}, {})", a, b) : fmt::format("{} - {}", a, b);
    case Prim::mul: return i32 ? fmt::format("jx_muli({}, {})", a, b) : fmt::format("{} * {}", a, b);
    case Prim::div: return fmt::format("{} / {}", a, b);
    case Prim::pow: return fmt::format("pow{}({}, {})", fs, a, b);
    case Prim::max: return fmt::format("jx_max{}({}, {})", f32 ? "f" : flt ? "d" : "i", a, b);
    case Prim::min: return fmt::format("jx_min{}({}, {})", f32 ? "f" : flt ? "d" : "i", a, b);
    case Prim::lt: return fmt::format("({} < {})", a, b);
    case Prim::le: return fmt::format("({} <= {})", a, b);
    case Prim::gt: return fmt::format("({} > {})", a, b);
    case Prim::ge: return fmt::format("({} >= {})", a, b);
    case Prim::eq: return fmt::format("({} == {})", a, b);
    case Prim::ne: return fmt::format("({} != {})", a, b);
    case Prim::logical_and: return fmt::format("({} != 0 && {} != 0)", a, b);
    case Prim::logical_or: return fmt::format("({} != 0 || {} != 0)", a, b);
    case Prim::select: return fmt::format("({} ? {} : {})", a, b, c);
    default: throw Error(fmt::format("native: {} is not an elementwise primitive", prim_name(n.prim)));
  }
}

// The statements computing `order`'s nodes; idx(d) names the loop index of space dim d.
std::string nodes_code(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx, const std::string& ind) {
  std::string s;
  for (int i : order) {
    const KNode& n = k.nodes[i];
    std::string e;
    switch (n.kind) {
      case KNodeKind::load: {
        const KLoad& l = k.loads[n.load];
        std::string off = fmt::format("{}", l.offset);
        for (std::size_t d = 0; d < l.strides.size(); ++d)
          if (l.strides[d] != 0) off += fmt::format(" + {}*{}", l.strides[d], idx[d]);
        if (l.indexed) off = fmt::format("(int64_t)v{}", n.a);
        if (l.clamp) off = fmt::format("jx_clamp({}, {})", off, k.inputs[l.buffer].size() - 1);
        e = fmt::format("({})in{}[{}]", c_type(n.dtype), l.buffer, off);
        break;
      }
      case KNodeKind::constant: e = literal(n.dtype, n.value); break;
      case KNodeKind::iota: e = fmt::format("({}){}", c_type(n.dtype), idx[n.dim]); break;
      case KNodeKind::reduce_result: e = fmt::format("({})acc", c_type(n.dtype)); break;
      case KNodeKind::alu: e = fmt::format("({})({})", c_type(n.dtype), alu_expr(k, n)); break;
    }
    s += fmt::format("{}const {} v{} = {};\n", ind, c_type(n.dtype), i, e);
  }
  return s;
}

std::string store(DType d, const std::string& v) {
  if (d == DType::bool_) return fmt::format("(uint8_t)({} != 0)", v);
  return fmt::format("({}){}", c_type(d), v);
}

}  // namespace

std::string render_kernel(const Kernel& k, const std::string& name, bool is_static) {
  std::string s = fmt::format("// {}\n{}void {}(const void* const* in_, void* const* out_) {{\n", k.name,
                              is_static ? "static inline " : "", name);
  for (std::size_t i = 0; i < k.inputs.size(); ++i)
    s += fmt::format("  const {0}* restrict in{1} = (const {0}*)in_[{1}];\n", c_type(k.inputs[i].dtype), i);
  s += fmt::format("  {0}* restrict out = ({0}*)out_[0];\n  int64_t o = 0;\n", c_type(k.out.dtype));
  std::vector<std::string> idx;
  for (std::size_t d = 0; d < k.space.size(); ++d) idx.push_back(fmt::format("i{}", d));
  auto is_red = [&](std::size_t d) {
    return std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
  };
  std::string ind = "  ";
  auto open = [&](bool reduced) {
    for (std::size_t d = 0; d < k.space.size(); ++d)
      if (is_red(d) == reduced) {
        s += fmt::format("{0}for (int64_t i{1} = 0; i{1} < {2}; ++i{1}) {{\n", ind, d, k.space[d]);
        ind += "  ";
      }
  };
  auto close = [&](bool reduced) {
    for (std::size_t d = 0; d < k.space.size(); ++d)
      if (is_red(d) == reduced) {
        ind.resize(ind.size() - 2);
        s += ind + "}\n";
      }
  };
  if (!k.is_reduction()) {
    open(false);
    s += nodes_code(k, k.reachable(k.body), idx, ind);
    s += fmt::format("{}out[o++] = {};\n", ind, store(k.out.dtype, fmt::format("v{}", k.body)));
    close(false);
    return s + "}\n";
  }
  const DType bd = k.nodes[k.body].dtype;
  const bool flt = is_floating(bd);
  std::string ident = k.reduce_op == Prim::reduce_sum ? "0.0" : k.reduce_op == Prim::reduce_prod ? "1.0"
                      : k.reduce_op == Prim::reduce_max ? "-INFINITY" : "INFINITY";
  open(false);
  s += fmt::format("{}double acc = {};\n", ind, ident);
  open(true);
  s += nodes_code(k, k.reachable(k.body), idx, ind);
  const std::string v = fmt::format("(double)v{}", k.body);
  switch (k.reduce_op) {
    case Prim::reduce_sum: s += fmt::format("{}acc += {};\n", ind, v); break;
    case Prim::reduce_prod:
      s += flt ? fmt::format("{}acc *= {};\n", ind, v) : fmt::format("{}acc = (double)((int64_t)acc * (int64_t){});\n", ind, v);
      break;
    default:  // max/min: NaN propagates, as in the interpreter
      s += fmt::format("{0}if (acc == acc && ({1} != {1} || {1} {2} acc)) acc = {1};\n", ind, v,
                       k.reduce_op == Prim::reduce_max ? ">" : "<");
      break;
  }
  close(true);
  if (!flt && (k.reduce_op == Prim::reduce_max || k.reduce_op == Prim::reduce_min)) s += fmt::format("{}if (isinf(acc)) acc = 0.0;\n", ind);
  // round the accumulator to the body dtype, as the interpreter does
  if (bd == DType::float32) s += fmt::format("{}acc = (double)(float)acc;\n", ind);
  else if (bd == DType::int32) s += fmt::format("{}acc = (double)jx_d2i_wrap(acc);\n", ind);
  else if (bd == DType::bool_) s += fmt::format("{}acc = acc != 0.0;\n", ind);
  if (k.epilogue >= 0) {
    std::vector<std::string> eidx = idx;
    for (std::size_t d = 0; d < k.space.size(); ++d)
      if (is_red(d)) eidx[d] = "0";
    s += nodes_code(k, k.reachable(k.epilogue), eidx, ind);
    s += fmt::format("{}out[o++] = {};\n", ind, store(k.out.dtype, fmt::format("v{}", k.epilogue)));
  } else {
    s += fmt::format("{}out[o++] = {};\n", ind, k.out.dtype == DType::int32 ? "jx_d2i_wrap(acc)" : store(k.out.dtype, "acc"));
  }
  close(false);
  return s + "}\n";
}


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
    std::string s = fmt::format("{{ {0}* o = ({0}*){1}; const {0}* x = (const {0}*){2}; int64_t k = 0;\n", T, out, in[0]);
    s += fmt::format("      for (int64_t i = 0; i < {}; ++i) o[i] = {};\n", op.out[0].size(), literal(a.dtype, op.params.value));
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
  std::string s = fmt::format("{{ unsigned char* o = (unsigned char*){};\n      for (int64_t q = 0; q < {}; ++q) {{\n", out, outer);
  for (std::size_t k = 0; k < op.in.size(); ++k) {
    const std::size_t chunk = static_cast<std::size_t>(op.in[k].shape[axis] * inner) * dtype_size(a.dtype);
    if (chunk) s += fmt::format("        memcpy(o, (const unsigned char*){} + q * {}, {}); o += {};\n", in[k], chunk, chunk, chunk);
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
    case Prim::cholesky: return fmt::format("jx_chol_{}((const {}*){}, ({}*){}, {}, {});", S, T, in[0], T, out[0], n, batch);
    case Prim::lu:
      return fmt::format("jx_lu_{}((const {}*){}, ({}*){}, ({}*){}, ({}*){}, {}, {});", S, T, in[0], T, out[0], T, out[1], T, out[2], n,
                         batch);
    case Prim::triangular_solve: {
      const auto& p = op.params;
      const AVal& b = op.in[1];
      const std::int64_t k = p.left_side ? b.shape.back() : b.shape[b.ndim() - 2];
      return fmt::format("jx_trsm_{}((const {}*){}, (const {}*){}, ({}*){}, {}, {}, {}, {}, {}, {}, {});", S, T, in[0], T, in[1], T,
                         out[0], n, k, batch, int(p.left_side), int(p.lower), int(p.transpose_a), int(p.unit_diagonal));
    }
    default: throw BackendError(fmt::format("native: no compiled-loop rendering for routine {}", prim_name(op.prim)));
  }
}

}  // namespace

std::string render_scan(const ScanProgram& sp, const std::string& name) {
  const Program& b = sp.body;
  for (const Step& st : b.steps)
    if (st.kind == Step::Kind::control) throw BackendError("native: nested scans in a scan body run as host loops");
  for (const Op& op : b.routines)
    if (op.prim == Prim::lu && op.in[0].shape.back() > 64)
      throw BackendError("native: lu of matrices larger than 64 in a scan body runs as a host loop");
  const std::size_t nc = sp.num_consts, nk = sp.num_carry, nin = b.num_inputs, nx = nin - nc - nk;
  const std::size_t ny = b.outputs.size() - nk;
  std::string s = kRoutines;
  for (std::size_t i = 0; i < b.kernels.size(); ++i) s += render_kernel(b.kernels[i], fmt::format("{}_k{}", name, i), true) + "\n";
  s += fmt::format("void {}(const void* const* in_, void* const* out_) {{\n", name);
  // storage: carries, carry staging, temporaries (stack when small, else one heap block)
  std::size_t local = 0;
  for (std::size_t k = 0; k < nk; ++k) local += 2 * ((b.buffers[nc + k].bytes() + 63) / 64 * 64);
  for (std::size_t t = nin; t < b.buffers.size(); ++t) local += (b.buffers[t].bytes() + 63) / 64 * 64;
  const bool heap = local > (std::size_t{128} << 10);
  if (heap) s += fmt::format("  unsigned char* heap = (unsigned char*)aligned_alloc(64, {});\n  if (!heap) return;\n", std::max<std::size_t>(local, 64));
  else s += fmt::format("  unsigned char heap[{}] __attribute__((aligned(64)));\n", std::max<std::size_t>(local, 64));
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
    s += fmt::format("    const unsigned char* x{0} = (const unsigned char*)in_[{1}] + t * {2};\n", j, nc + nk + j, b.buffers[nc + nk + j].bytes());
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
    s += fmt::format("    memcpy((unsigned char*)out_[{}] + t * {}, {}, {});\n", nk + j, b.buffers[buf].bytes(), ptr(buf), b.buffers[buf].bytes());
  }
  for (std::size_t k = 0; k < nk; ++k)
    s += fmt::format("    memcpy(st{}, {}, {});\n", k, ptr(b.outputs[k]), b.buffers[nc + k].bytes());
  for (std::size_t k = 0; k < nk; ++k) s += fmt::format("    memcpy(c{0}, st{0}, {1});\n", k, b.buffers[nc + k].bytes());
  s += "  }\n";
  for (std::size_t k = 0; k < nk; ++k) s += fmt::format("  memcpy(out_[{0}], c{0}, {1});\n", k, b.buffers[nc + k].bytes());
  if (heap) s += "  free(heap);\n";
  return s + "}\n";
}

}  // namespace jx::native
