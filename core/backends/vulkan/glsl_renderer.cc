#include "core/backends/vulkan/glsl_renderer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "core/backends/cstyle.h"
#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"
#include "core/base/errors.h"

namespace jx::vk {

std::string gtype(DType d) {
  switch (d) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int";
    case DType::bool_: return "bool";
  }
  return "void";
}

std::string btype(DType d) { return d == DType::bool_ ? "uint" : gtype(d); }

namespace {

// Double-precision exp/log/sin/cos/tanh/log1p/pow: GLSL has these for float only. Range
// reduction + polynomials; within a few ulp of libm on normal inputs.
const char* kF64Math = R"(
#define JX_INF packDouble2x32(uvec2(0u, 0x7ff00000u))
#define JX_NAN packDouble2x32(uvec2(0u, 0x7ff80000u))
double jx_exp_d(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384LF) return JX_INF;
  if (x < -745.1332191019412LF) return 0.0LF;
  double n = floor(x * 1.4426950408889634LF + 0.5LF);
  precise double r = (x - n * 0.6931471803691238LF) - n * 1.9082149292705877e-10LF;
  double p = 1.0LF / 6227020800.0LF;
  p = p * r + 1.0LF / 479001600.0LF; p = p * r + 1.0LF / 39916800.0LF; p = p * r + 1.0LF / 3628800.0LF;
  p = p * r + 1.0LF / 362880.0LF; p = p * r + 1.0LF / 40320.0LF; p = p * r + 1.0LF / 5040.0LF;
  p = p * r + 1.0LF / 720.0LF; p = p * r + 1.0LF / 120.0LF; p = p * r + 1.0LF / 24.0LF;
  p = p * r + 1.0LF / 6.0LF; p = p * r + 0.5LF; p = p * r + 1.0LF; p = p * r + 1.0LF;
  int ni = int(n);
  return ldexp(ldexp(p, ni / 2), ni - ni / 2);
}
double jx_log_d(double x) {
  if (isnan(x) || x < 0.0LF) return JX_NAN;
  if (x == 0.0LF) return -JX_INF;
  if (isinf(x)) return x;
  int e;
  double m = frexp(x, e);
  if (m < 0.7071067811865476LF) { m *= 2.0LF; e -= 1; }
  double s = (m - 1.0LF) / (m + 1.0LF), s2 = s * s;
  double p = 1.0LF / 25.0LF;  // sum_k s2^k / (2k + 1): constant quotients, folded by glslang
  p = p * s2 + 1.0LF / 23.0LF; p = p * s2 + 1.0LF / 21.0LF; p = p * s2 + 1.0LF / 19.0LF;
  p = p * s2 + 1.0LF / 17.0LF; p = p * s2 + 1.0LF / 15.0LF; p = p * s2 + 1.0LF / 13.0LF;
  p = p * s2 + 1.0LF / 11.0LF; p = p * s2 + 1.0LF / 9.0LF; p = p * s2 + 1.0LF / 7.0LF;
  p = p * s2 + 1.0LF / 5.0LF; p = p * s2 + 1.0LF / 3.0LF;
  p = p * s2 + 1.0LF;
  double de = double(e);
  return de * 0.6931471803691238LF + (de * 1.9082149292705877e-10LF + 2.0LF * s * p);
}
double jx_log1p_d(double x) {
  if (abs(x) < 1e-4LF) return x * (1.0LF - x * (0.5LF - x * (1.0LF / 3.0LF - x * 0.25LF)));
  precise double u = 1.0LF + x;
  if (isinf(u)) return u;
  precise double c = (u - 1.0LF) - x;  // rounding error of u; `precise` forbids reassociating it away
  return jx_log_d(u) - c / u;
}
// sin and cos of r in [-pi/4, pi/4]
double jx_sinp(double r) {  // r + r^3 * sum_k (-1)^k r^(2k-2) / (2k+1)!, k = 1..10
  double r2 = r * r, p = 1.0LF / 51090942171709440000.0LF;
  p = p * r2 - 1.0LF / 121645100408832000.0LF; p = p * r2 + 1.0LF / 355687428096000.0LF;
  p = p * r2 - 1.0LF / 1307674368000.0LF; p = p * r2 + 1.0LF / 6227020800.0LF; p = p * r2 - 1.0LF / 39916800.0LF;
  p = p * r2 + 1.0LF / 362880.0LF; p = p * r2 - 1.0LF / 5040.0LF; p = p * r2 + 1.0LF / 120.0LF;
  p = p * r2 - 1.0LF / 6.0LF;
  return r + r * r2 * p;
}
double jx_cosp(double r) {
  double r2 = r * r, p = 1.0LF / 2432902008176640000.0LF;
  p = p * r2 - 1.0LF / 6402373705728000.0LF; p = p * r2 + 1.0LF / 20922789888000.0LF;
  p = p * r2 - 1.0LF / 87178291200.0LF; p = p * r2 + 1.0LF / 479001600.0LF; p = p * r2 - 1.0LF / 3628800.0LF;
  p = p * r2 + 1.0LF / 40320.0LF; p = p * r2 - 1.0LF / 720.0LF; p = p * r2 + 1.0LF / 24.0LF; p = p * r2 - 0.5LF;
  return 1.0LF + r2 * p;
}
double jx_sincos_d(double x, int want_cos) {
  if (isnan(x) || isinf(x)) return JX_NAN;
  double k = floor(x * 0.6366197723675814LF + 0.5LF);
  precise double r = ((x - k * 1.57079632673412561417LF) - k * 6.07710050630396597660e-11LF) - k * 2.02226624871116645580e-21LF;
  int q = (int(mod(k, 4.0LF)) + want_cos) & 3;
  if (q == 0) return jx_sinp(r);
  if (q == 1) return jx_cosp(r);
  if (q == 2) return -jx_sinp(r);
  return -jx_cosp(r);
}
double jx_tanh_d(double x) {
  double a = abs(x);
  if (isnan(x)) return x;
  if (a > 22.0LF) return sign(x);
  if (a < 0.1LF) {
    double x2 = x * x;
    return x * (1.0LF + x2 * (-1.0LF / 3.0LF + x2 * (2.0LF / 15.0LF + x2 * (-17.0LF / 315.0LF + x2 * (62.0LF / 2835.0LF + x2 * (-1382.0LF / 155925.0LF))))));
  }
  double e = jx_exp_d(-2.0LF * a);
  return sign(x) * (1.0LF - e) / (1.0LF + e);
}
double jx_pow_d(double a, double b) {
  if (b == 0.0LF || a == 1.0LF) return 1.0LF;
  if (isnan(a) || isnan(b)) return JX_NAN;
  bool bint = floor(b) == b;
  bool odd = bint && abs(b) < 9007199254740992.0LF && mod(b, 2.0LF) == 1.0LF;
  if (a == 0.0LF) return b > 0.0LF ? (odd ? a : 0.0LF) : (odd && sign(1.0LF / a) < 0.0LF ? -JX_INF : JX_INF);
  if (a < 0.0LF) {
    if (!bint) return JX_NAN;
    double r = jx_exp_d(b * jx_log_d(-a));
    return odd ? -r : r;
  }
  return jx_exp_d(b * jx_log_d(a));
}
)";

const char* kCommon = R"(
float jx_max(float a, float b) { return isnan(a) ? a : isnan(b) ? b : max(a, b); }
float jx_min(float a, float b) { return isnan(a) ? a : isnan(b) ? b : min(a, b); }
int jx_max(int a, int b) { return max(a, b); }
int jx_min(int a, int b) { return min(a, b); }
int jx_f2i(float v) { return isnan(v) ? 0 : v >= 2147483647.0 ? 2147483647 : v <= -2147483648.0 ? int(0x80000000u) : int(v); }
float jx_powf(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);
  if (a > 0.0) return pow(a, b);
  bool bint = floor(b) == b;
  bool odd = bint && abs(b) < 16777216.0 && mod(b, 2.0) == 1.0;
  if (a == 0.0) return b > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  if (!bint) return uintBitsToFloat(0x7fc00000u);
  float r = pow(-a, b);
  return odd ? -r : r;
}
float jx_log1pf(float x) { precise float u = 1.0 + x; precise float d = u - 1.0; return u == 1.0 ? x : log(u) * (x / d); }
)";

const char* kCommonF64 = R"(
double jx_max(double a, double b) { return isnan(a) ? a : isnan(b) ? b : max(a, b); }
double jx_min(double a, double b) { return isnan(a) ? a : isnan(b) ? b : min(a, b); }
int jx_f2i(double v) { return isnan(v) ? 0 : v >= 2147483647.0LF ? 2147483647 : v <= -2147483648.0LF ? int(0x80000000u) : int(v); }
)";

}  // namespace

std::string literal(DType d, double v) {
  switch (d) {
    case DType::float32:
      return fmt::format("uintBitsToFloat({}u)", std::bit_cast<std::uint32_t>(static_cast<float>(v)));
    case DType::float64: {
      const auto u = std::bit_cast<std::uint64_t>(v);
      return fmt::format("packDouble2x32(uvec2({}u, {}u))", static_cast<std::uint32_t>(u),
                         static_cast<std::uint32_t>(u >> 32));
    }
    case DType::int32: return fmt::format("int({}u)", static_cast<std::uint32_t>(static_cast<std::int32_t>(v)));
    case DType::bool_: return v != 0.0 ? "true" : "false";
  }
  return "0";
}

bool uses_double(const std::vector<AVal>& ins, DType out, const std::vector<KNode>& nodes) {
  if (out == DType::float64) return true;
  for (const AVal& a : ins)
    if (a.dtype == DType::float64) return true;
  for (const KNode& n : nodes)
    if (n.dtype == DType::float64) return true;
  return false;
}

bool short_f32_sums() {
  static const bool on = !env_is_zero("JX_VK_F32_ACC");
  return on;
}

std::string prelude(bool doubles, bool f64_math) {
  std::string s = kCommon;
  if (doubles) s += kCommonF64;
  if (f64_math) s += kF64Math;
  return s;
}

std::string load_expr(DType d, int b, const std::string& idx) {
  if (d == DType::bool_) return fmt::format("(((in{0}.d[({1}) >> 2] >> ((({1}) & 3) * 8)) & 0xffu) != 0u)", b, idx);
  return fmt::format("in{}.d[{}]", b, idx);
}

namespace {

// GLSL 4.50: the C-style renderer (core/backends/cstyle.h) with GLSL's types and constructors,
// its bounds-checked loads through `load` where a fused shader remaps inputs, and the
// transcendentals through our double-precision helpers where the device has doubles.
class GlslLanguage final : public CStyleLanguage {
 public:
  explicit GlslLanguage(const KernelCtx& c) : c_(c) {}
  std::string type(DType d) const override { return gtype(d); }
  std::string literal(DType d, double v) const override { return vk::literal(d, v); }
  std::string cast(DType d, const std::string& e, bool) const override { return fmt::format("{}({})", gtype(d), e); }
  std::string load(const Kernel& k, const KLoad& l, const KNode& n, const std::string& off) const override {
    const DType d = k.inputs[l.buffer].dtype;
    const std::string e = c_.load ? c_.load(l.buffer, off) : load_expr(d, l.buffer, off);
    return d == n.dtype ? e : cast(n.dtype, e, false);
  }
  std::string clamp(const std::string& off, std::int64_t hi) const override {
    return fmt::format("clamp({}, 0, {})", off, hi);
  }
  std::string index_value(int node) const override { return var(node); }
  std::string truthy(DType d, const std::string& v) const override {
    return d == DType::bool_ ? v : fmt::format("({} != {}(0))", v, gtype(d));
  }
  // Only where the form says how its warps lie over the space and the jump skips at least
  // kLazySelectSaving of the branches' loads (glsl_uniform.cc); JX_VK_LAZY_SELECT=0: both
  // branches everywhere, for measuring.
  bool lazy_select(const Kernel& k, int select, int then_loads, int else_loads) const override {
    static const bool on = !env_is_zero("JX_VK_LAZY_SELECT");
    return on && c_.warps &&
           skipped_loads(k, k.nodes[select].a, *c_.warps, then_loads, else_loads) >= kLazySelectSaving;
  }
  std::string op(const Kernel& k, const KNode& n) const override {
    const DType in = operand_dtype(k, n);
    const std::string a = var(n.a), b = var(n.b);
    switch (n.prim) {
      case Prim::exp: return transcendental("jx_exp_d", "exp", in, a);
      case Prim::log: return transcendental("jx_log_d", "log", in, a);
      case Prim::log1p: return transcendental("jx_log1p_d", "jx_log1pf", in, a);
      case Prim::tanh: return transcendental("jx_tanh_d", "tanh", in, a);
      case Prim::sin:
      case Prim::cos: {
        const int which = n.prim == Prim::cos;
        if (in == DType::float64) return fmt::format("jx_sincos_d({}, {})", a, which);
        return c_.f64 ? fmt::format("float(jx_sincos_d(double({}), {}))", a, which)
                      : fmt::format("{}({})", prim_name(n.prim), a);
      }
      case Prim::pow:
        if (in == DType::float64) return fmt::format("jx_pow_d({}, {})", a, b);
        return c_.f64 ? fmt::format("float(jx_pow_d(double({}), double({})))", a, b)
                      : fmt::format("jx_powf({}, {})", a, b);
      default: return CStyleLanguage::op(k, n);
    }
  }

 private:
  // f32 transcendentals through the double helpers when the device has doubles (accuracy close
  // to the oracle's libm); otherwise the GLSL built-ins.
  std::string transcendental(const char* fn_d, const char* fn_f, DType in, const std::string& a) const {
    if (in == DType::float64) return fmt::format("{}({})", fn_d, a);
    if (c_.f64) return fmt::format("float({}(double({})))", fn_d, a);
    return fmt::format("{}({})", fn_f, a);
  }
  const KernelCtx& c_;
};
}  // namespace

std::string nodes_code(const KernelCtx& c, const std::vector<int>& order, const std::vector<std::string>& idx,
                       const std::string& ind, const NodeNames* names) {
  GlslLanguage lang(c);
  if (names) lang.rename(names->suffix, names->acc);
  return lang.nodes(c.k, order, idx, ind);
}

std::string store_code(DType d, const std::string& o, const std::string& v, const std::string& buf) {
  if (d == DType::bool_)  // bytes packed in uints: clear then set this invocation's byte
    return fmt::format(
        "  atomicAnd({2}.d[({0}) >> 2], ~(0xffu << ((({0}) & 3) * 8)));\n"
        "  atomicOr({2}.d[({0}) >> 2], uint({1}) << ((({0}) & 3) * 8));\n",
        o, v, buf);
  return fmt::format("  {}.d[{}] = {};\n", buf, o, v);
}

std::string kernel_header(const std::vector<AVal>& ins, DType out, bool doubles, bool f64_math, std::int64_t n) {
  std::string s = glsl_header(kWorkgroup);
  for (std::size_t i = 0; i < ins.size(); ++i)
    s += fmt::format("layout(std430, set = 0, binding = {0}) readonly buffer B{0} {{ {1} d[]; }} in{0};\n", i,
                     btype(ins[i].dtype));
  s += fmt::format("layout(std430, set = 0, binding = {}) {}buffer BO {{ {} d[]; }} outb;\n", ins.size(),
                   out == DType::bool_ ? "" : "writeonly ", btype(out));
  s += prelude(doubles, f64_math);
  s += fmt::format(
      "void main() {{\n  const int gi = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n"
      "  if (gi >= {}) return;\n",
      kWorkgroup, n);
  return s;
}

std::string decompose(const Shape& dims, const std::vector<std::string>& names, const std::string& flat) {
  std::string s = fmt::format("  int r_ = {};\n", flat);
  for (std::size_t j = dims.size(); j-- > 0;) {
    s += fmt::format("  const int {} = r_ % {};\n", names[j], std::max<std::int64_t>(dims[j], 1));
    if (j) s += fmt::format("  r_ /= {};\n", std::max<std::int64_t>(dims[j], 1));
  }
  return s;
}

// JX_VK_UNROLL_REDUCE=0: reduced dims loop without [[unroll]], for measuring.
std::string unrolled_reduction(std::int64_t n) {
  static const bool on = !env_is_zero("JX_VK_UNROLL_REDUCE");
  return on && unroll_loops() && n <= 16 ? "[[unroll]] " : "";
}

std::string loop_open(const std::string& var, std::int64_t n, const std::string& ind, Shader& sh) {
  sh.max_loop = std::max(sh.max_loop, n);
  return fmt::format("{0}for (int {1} = 0; {1} < {2}; ++{1}) {{\n", ind, var, n);
}

std::pair<std::uint32_t, std::uint32_t> workgroups(std::int64_t n, std::int64_t size) {
  const std::int64_t g = (n + size - 1) / size;
  const std::int64_t gx = std::min<std::int64_t>(g, 65535);
  const std::int64_t gy = gx ? (g + gx - 1) / gx : 0;
  return {static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy)};
}

bool reduced_dim(const Kernel& k, std::size_t d) {
  return std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
}
std::int64_t reduced_elements(const Kernel& k) {
  std::int64_t r = 1;
  for (auto ax : k.reduce_axes) r *= k.space[ax];
  return r;
}

std::string accumulator_type(const Kernel& k, bool f64) {
  const DType bd = k.nodes[k.body].dtype;
  if (bd == DType::float32 && short_f32_sums() && short_f32_sum(reduced_elements(k))) return "float";
  return !is_floating(bd) ? "int" : (f64 ? "double" : "float");
}

std::string reduction_identity(const Kernel& k, const std::string& at) {
  const bool flt = at != "int";
  if (!flt && reduced_elements(k) == 0) return "0";  // empty int32 max/min: 0, as the oracle
  switch (k.reduce_op) {
    case Prim::reduce_sum: return flt ? at + "(0)" : "0";
    case Prim::reduce_prod: return flt ? at + "(1)" : "1";
    case Prim::reduce_max:
      return flt ? (at == "double" ? literal(DType::float64, -INFINITY) : literal(DType::float32, -INFINITY))
                 : "int(0x80000000u)";
    case Prim::reduce_min:
      return flt ? (at == "double" ? literal(DType::float64, INFINITY) : literal(DType::float32, INFINITY))
                 : "0x7fffffff";
    default: throw Error("vulkan: unknown reduction");
  }
}

std::string combine_code(const Kernel& k, const std::string& acc, const std::string& v) {
  const bool flt = is_floating(k.nodes[k.body].dtype);
  switch (k.reduce_op) {
    case Prim::reduce_sum: return fmt::format("{} += {};\n", acc, v);
    case Prim::reduce_prod: return fmt::format("{} *= {};\n", acc, v);
    default:
      if (flt)
        return fmt::format("if (!isnan({0}) && (isnan({1}) || {1} {2} {0})) {0} = {1};\n", acc, v,
                           k.reduce_op == Prim::reduce_max ? ">" : "<");
      return fmt::format("{0} = {1}({0}, {2});\n", acc, k.reduce_op == Prim::reduce_max ? "max" : "min", v);
  }
}

std::string strided_terms(const KernelCtx& c, const SpaceSplit& sp, const std::string& at, const std::string& outer,
                          const std::string& first, std::int64_t step) {
  const Kernel& k = c.k;
  std::string s = decompose(sp.outer, sp.outer_names, outer);
  s += fmt::format("  {} acc = {};\n", at, reduction_identity(k, at));
  s += fmt::format("  for (int rr_ = {}; rr_ < {}; rr_ += {}) {{\n", first, reduced_elements(k), step);
  s += decompose(sp.red, sp.red_names, "rr_");
  s += nodes_code(c, k.reachable(k.body), sp.idx, "    ");
  return s + "    " + combine_code(k, "acc", fmt::format("{}(v{})", at, k.body)) + "  }\n";
}

std::string tree_fold(const Kernel& k, const std::string& at, const std::string& red, const std::string& lane,
                      std::int64_t half, std::int64_t stride) {
  const std::string partner = stride == 1 ? "h_" : fmt::format("h_ * {}", stride);
  return fmt::format(
      "  {0}[lid] = acc;\n  barrier();\n  for (int h_ = {1}; h_ > 0; h_ >>= 1) {{\n    if ({2} < h_) {{\n      {3} b_ "
      "= "
      "{0}[lid + {4}];\n      {5}    }}\n    barrier();\n  }}\n",
      red, half, lane, at, partner, combine_code(k, red + "[lid]", "b_"));
}

SpaceSplit split_space(const Kernel& k) {
  SpaceSplit sp;
  for (std::size_t d = 0; d < k.space.size(); ++d) {
    sp.idx.push_back(fmt::format("i{}", d));
    (reduced_dim(k, d) ? sp.red : sp.outer).push_back(k.space[d]);
    (reduced_dim(k, d) ? sp.red_names : sp.outer_names).push_back(sp.idx.back());
  }
  return sp;
}

std::string kernel_element_code(const KernelCtx& c, const std::string& elem, Shader& sh, const StoreFn& store) {
  const Kernel& k = c.k;
  const SpaceSplit sp = split_space(k);
  std::string s = decompose(sp.outer, sp.outer_names, elem);
  if (!k.is_reduction()) {
    s += nodes_code(c, k.reachable(k.body), sp.idx, "  ");
    return s + store(fmt::format("v{}", k.body));
  }
  // Reduction: the invocation loops over the reduced dims, accumulating in double (as the
  // oracle does) when the device has doubles, in the int type for int32.
  const std::string at = accumulator_type(k, c.f64);
  s += fmt::format("  {} acc = {};\n", at, reduction_identity(k, at));
  std::string ind = "  ";
  int count = 0;
  for (std::size_t r = 0; r < sp.red.size(); ++r) {
    s += ind + unrolled_reduction(sp.red[r]) + loop_open(sp.red_names[r], sp.red[r], "", sh);
    ind += "  ";
    ++count;
  }
  s += nodes_code(c, k.reachable(k.body), sp.idx, ind);
  s += ind + combine_code(k, "acc", fmt::format("{}(v{})", at, k.body));
  for (int i = 0; i < count; ++i) {
    ind.resize(ind.size() - 2);
    s += ind + "}\n";
  }
  return s + reduction_finish(c, sp.idx, store);
}

std::string reduction_finish(const KernelCtx& c, const std::vector<std::string>& idx, const StoreFn& store) {
  const Kernel& k = c.k;
  std::string s;
  if (k.nodes[k.body].dtype == DType::float32 && accumulator_type(k, c.f64) == "double")
    s += "  acc = double(float(acc));\n";
  if (k.epilogue >= 0) {
    std::vector<std::string> eidx = idx;
    for (std::size_t d = 0; d < k.space.size(); ++d)
      if (reduced_dim(k, d)) eidx[d] = "0";
    s += nodes_code(c, k.reachable(k.epilogue), eidx, "  ");
    return s + store(fmt::format("v{}", k.epilogue));
  }
  return s + store(k.out.dtype == DType::bool_ ? "acc != 0" : fmt::format("{}(acc)", gtype(k.out.dtype)));
}

namespace {
// Larger reductions split each output over G workgroups in the same dispatch (one workgroup per
// output is latency-bound: the H100's log-likelihood sum over 102400 terms took 0.6 ms in one).
// Workgroup p of output o folds elements p·256 + lid, stepping G·256, as above; lane 0 stores the
// partial in the scratch buffer and counts itself in; the last of the G to count in folds the G
// partials (lane l those at l, l + 256, ... in order, then the workgroup's fixed tree:
// deterministic whichever finishes last), finishes the output and resets the counter, so the
// scratch buffer is left as it was found.
// G gives each invocation about kSplitTermsPerInvocation terms (JX_VK_SPLIT_TERMS overrides):
// with 8 the DLM's log-likelihood sum over 102400 terms (a log each) ran in 50 workgroups, fewer
// than the H200's SMs, each invocation evaluating its terms one after another (15.8 µs).
constexpr std::int64_t kMaxSplit = 256;
constexpr std::int64_t kSplitTermsPerInvocation = 2;

std::int64_t split_count(const Kernel& k) {
  static const std::int64_t terms = std::max<std::int64_t>(1, env_int("JX_VK_SPLIT_TERMS", kSplitTermsPerInvocation));
  const std::int64_t per_group = kWorkgroup * terms;
  const std::int64_t reduced = reduced_elements(k);
  if (reduced < kSplitReductionMin) return 1;  // one workgroup suffices
  return std::min(kMaxSplit, (reduced + per_group - 1) / per_group);
}

// G = 1: one workgroup per output, no scratch buffer.
Shader render_workgroup_reduction(const Kernel& k, bool f64_math, std::int64_t G) {
  const std::int64_t reduced = reduced_elements(k), outs = k.out.size();
  const bool split = G > 1;
  KernelCtx c{k, f64_math, nullptr};
  Shader sh;
  sh.name = k.name + (split ? "_split" : "_wg");
  sh.buffers = k.buffers() + (split ? 1 : 0);
  sh.float64 = uses_double(k.inputs, k.out.dtype, k.nodes);
  sh.invocations = outs * G * kWorkgroup;
  const std::string at = accumulator_type(k, f64_math);
  std::string s = kernel_header(k.inputs, k.out.dtype, sh.float64 || f64_math, f64_math, sh.invocations);
  std::string decl = fmt::format("shared {} red_[{}];\n", at, kWorkgroup);
  if (split) {
    sh.scratch_bytes =
        static_cast<std::size_t>(outs * G) * (at == "double" ? 8 : 4) + static_cast<std::size_t>(outs) * 4;
    decl += fmt::format(
        "shared bool last_;\nlayout(std430, set = 0, binding = {}) coherent buffer BS {{ {} part_[{}]; uint cnt_[{}]; "
        "}} scr;\n",
        k.buffers(), at, outs * G, outs);
  }
  s.insert(s.find("void main() {"), decl);
  s += fmt::format(
      "  const int wg = gi / {0};\n  const int lid = int(gl_LocalInvocationIndex);\n  const int o_ = wg / {1};\n  "
      "const int p_ = wg % {1};\n",
      kWorkgroup, G);
  const SpaceSplit sp = split_space(k);
  s += strided_terms(c, sp, at, "o_", fmt::format("p_ * {} + lid", kWorkgroup), G * kWorkgroup);
  const std::string tree = tree_fold(k, at, "red_", "lid", kWorkgroup / 2, 1);
  s += tree;
  if (!split) {
    s += "  if (lid != 0) return;\n  acc = red_[0];\n";
  } else {
    // the last workgroup to finish folds the G partials: lane l those at l, l + 256, ... in
    // order, then the same tree (one lane reading all G in turn waited on G dependent loads)
    s += fmt::format(
        "  if (lid == 0) {{\n    scr.part_[wg] = red_[0];\n    memoryBarrierBuffer();\n    last_ = "
        "atomicAdd(scr.cnt_[o_], 1u) == {}u;\n  }}\n"
        "  barrier();\n  if (!last_) return;\n  memoryBarrierBuffer();\n",
        G - 1);
    s += fmt::format(
        "  acc = {};\n  for (int q_ = lid; q_ < {}; q_ += {}) {{\n    {} b_ = scr.part_[o_ * {} + q_];\n    {}  }}\n",
        reduction_identity(k, at), G, kWorkgroup, at, G, combine_code(k, "acc", "b_"));
    s += tree + "  if (lid != 0) return;\n  acc = red_[0];\n  scr.cnt_[o_] = 0u;\n";
  }
  s += reduction_finish(c, sp.idx, [&](const std::string& v) { return store_code(k.out.dtype, "o_", v); });
  sh.glsl = s + "}\n";
  sh.max_loop = std::max<std::int64_t>((reduced + G * kWorkgroup - 1) / (G * kWorkgroup), split ? G : 0);
  return sh;
}
std::atomic<bool> g_unroll_loops{false};  // set_unroll_loops
}  // namespace

void set_unroll_loops(bool on) { g_unroll_loops.store(on); }
bool unroll_loops() { return g_unroll_loops.load(); }

std::string glsl_header(std::int64_t local_size_x) {
  return fmt::format(
      "#version 450\n#extension GL_EXT_control_flow_attributes : enable\nlayout(local_size_x = {}) in;\n",
      local_size_x);
}

Shader render_kernel(const Kernel& k, bool f64_math) {
  if (k.is_reduction() && reduced_elements(k) >= kWorkgroupReduceMin) {
    const std::int64_t split = split_count(k);
    if (split == 1 || !k.scratch_binding) return render_workgroup_reduction(k, f64_math, 1);
    if (const std::int64_t P = outputs_in_lanes_phases(k)) return render_outputs_in_lanes(k, f64_math, P);
    return render_workgroup_reduction(k, f64_math, split);
  }
  KernelCtx c{k, f64_math, nullptr};
  const KernelLayout lay = kernel_layout(k);
  Shader sh;
  sh.name = kernel_shader_name(k, lay);
  sh.buffers = k.buffers();
  sh.float64 = uses_double(k.inputs, k.out.dtype, k.nodes);
  sh.invocations = kernel_invocations(k, lay);
  std::string s = kernel_header(k.inputs, k.out.dtype, sh.float64 || f64_math, f64_math, sh.invocations);
  if (lay.lanes) s.insert(s.find("void main() {"), lanes_shared(k, f64_math, "red_"));
  s += kernel_invocation_code(c, lay, "gi", sh, "outb", "red_");
  sh.glsl = s + "}\n";
  return sh;
}

bool joins_group(const Kernel& k) {
  return k.out.size() > 0 && !(k.is_reduction() && reduced_elements(k) >= kWorkgroupReduceMin);
}

// Member j owns the invocations [off_j, off_j + n_j), off_j a multiple of the workgroup size, so
// every workgroup runs one member's code (no divergence but the last partial workgroup of each).
Shader render_kernel_group(const std::vector<GroupedKernel>& ms, const std::vector<AVal>& ins, bool f64_math) {
  Shader sh;
  sh.buffers = static_cast<int>(ins.size() + ms.size());
  std::vector<KernelLayout> lays;
  for (const auto& m : ms) {
    lays.push_back(kernel_layout(*m.kernel));
    sh.float64 = sh.float64 || uses_double(m.kernel->inputs, m.kernel->out.dtype, m.kernel->nodes);
    sh.name += (sh.name.empty() ? "" : "+") + kernel_shader_name(*m.kernel, lays.back());
  }
  std::string s = glsl_header(kWorkgroup);
  for (std::size_t i = 0; i < ins.size(); ++i)
    s += fmt::format("layout(std430, set = 0, binding = {0}) readonly buffer B{0} {{ {1} d[]; }} in{0};\n", i,
                     btype(ins[i].dtype));
  for (std::size_t j = 0; j < ms.size(); ++j) {
    const DType d = ms[j].kernel->out.dtype;
    s += fmt::format("layout(std430, set = 0, binding = {}) {}buffer BO{} {{ {} d[]; }} out{};\n", ins.size() + j,
                     d == DType::bool_ ? "" : "writeonly ", j, btype(d), j);
  }
  s += prelude(sh.float64 || f64_math, f64_math);
  s += fmt::format(
      "void main() {{\n  const int gi = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n",
      kWorkgroup);
  std::int64_t off = 0;
  for (std::size_t j = 0; j < ms.size(); ++j) {
    const Kernel& k = *ms[j].kernel;
    const std::vector<int>& binds = ms[j].binds;
    KernelCtx c{k, f64_math, [&](int b, const std::string& o) { return load_expr(k.inputs[b].dtype, binds[b], o); }};
    const std::int64_t n = kernel_invocations(k, lays[j]);
    s += fmt::format("  if (gi >= {0} && gi < {1}) {{\n  const int e_ = gi - {0};\n", off, off + n);
    const std::string red = fmt::format("red{}_", j);
    if (lays[j].lanes) s.insert(s.find("void main() {"), lanes_shared(k, f64_math, red));
    s += kernel_invocation_code(c, lays[j], "e_", sh, fmt::format("out{}", j), red);
    s += "  }\n";
    off += (n + kWorkgroup - 1) / kWorkgroup * kWorkgroup;
  }
  sh.invocations = off;
  sh.glsl = s + "}\n";
  return sh;
}

bool routine_has_shader(Prim p) {
  return p == Prim::pad || p == Prim::concatenate || p == Prim::argmax || p == Prim::argmin;
}

bool routine_inlines(Prim p) {
  return routine_has_shader(p) || p == Prim::cholesky || p == Prim::triangular_solve || p == Prim::lu;
}

std::string routine_element_code(const Op& op, const std::string& elem, Shader& sh,
                                 const std::function<std::string(int, const std::string&)>& load,
                                 const StoreFn& store) {
  const PrimParams& p = op.params;
  const AVal& out = op.out[0];
  auto rm_offset = [](const Shape& sh_, const std::vector<std::string>& names) {  // row-major offset expression
    std::string e = "0";
    std::int64_t st = 1;
    for (std::size_t d = sh_.size(); d-- > 0;) {
      e += fmt::format(" + {}*{}", st, names[d]);
      st *= sh_[d];
    }
    return e;
  };
  std::vector<std::string> names;
  for (std::size_t d = 0; d < out.shape.size(); ++d) names.push_back(fmt::format("o{}", d));
  const std::string t = gtype(out.dtype);
  std::string s;
  if (op.prim == Prim::pad) {
    s += decompose(out.shape, names, elem);
    std::string inside = "true";
    std::vector<std::string> src;
    for (std::size_t d = 0; d < out.shape.size(); ++d) {
      src.push_back(fmt::format("({} - {})", names[d], p.lo[d]));
      inside += fmt::format(" && {0} >= 0 && {0} < {1}", src.back(), op.in[0].shape[d]);
    }
    s += fmt::format("  {} v = {};\n  if ({}) v = {};\n", t, literal(out.dtype, p.value), inside,
                     load(0, rm_offset(op.in[0].shape, src)));
    return s + store("v");
  }
  if (op.prim == Prim::concatenate) {
    s += decompose(out.shape, names, elem);
    s += fmt::format("  {} v;\n", t);
    std::int64_t start = 0;
    for (std::size_t i = 0; i < op.in.size(); ++i) {
      const std::int64_t len = op.in[i].shape[p.axis];
      std::vector<std::string> src = names;
      src[p.axis] = fmt::format("({} - {})", names[p.axis], start);
      s += fmt::format("  {}if ({} < {}) v = {};\n", i ? "else " : "", names[p.axis], start + len,
                       load(static_cast<int>(i), rm_offset(op.in[i].shape, src)));
      start += len;
    }
    return s + store("v");
  }
  // argmax / argmin over p.axis: first extreme, NaN wins (as the oracle)
  const Shape& is = op.in[0].shape;
  std::int64_t inner = 1;
  for (std::size_t d = p.axis + 1; d < is.size(); ++d) inner *= is[d];
  const std::int64_t n = is[p.axis];
  const bool flt = is_floating(op.in[0].dtype);
  s += fmt::format("  const int base = (({2}) / {0}) * {1} * {0} + ({2}) % {0};\n  int best = 0;\n", inner, n, elem);
  s += loop_open("k", n, "  ", sh);
  const std::string bv = load(0, fmt::format("base + best * {}", inner));
  const std::string kv = load(0, fmt::format("base + k * {}", inner));
  if (flt)
    s += fmt::format("    if (isnan({0})) break;\n    if (isnan({1}) || {1} {2} {0}) best = k;\n", bv, kv,
                     op.prim == Prim::argmax ? ">" : "<");
  else
    s += fmt::format("    if ({1} {2} {0}) best = k;\n", bv, kv, op.prim == Prim::argmax ? ">" : "<");
  s += "  }\n";
  return s + store("best");
}

std::optional<Shader> render_routine(const Op& op) {
  if (!routine_has_shader(op.prim)) return std::nullopt;
  Shader sh;
  sh.name = std::string(prim_name(op.prim));
  sh.buffers = static_cast<int>(op.in.size()) + 1;
  const AVal& out = op.out[0];
  sh.float64 = uses_double(op.in, out.dtype, {});
  sh.invocations = out.size();
  std::string s = kernel_header(op.in, out.dtype, sh.float64, false, sh.invocations);
  s += routine_element_code(
      op, "gi", sh, [&](int b, const std::string& off) { return load_expr(op.in[b].dtype, b, off); },
      [&](const std::string& v) { return store_code(out.dtype, "gi", v); });
  sh.glsl = s + "}\n";
  return sh;
}

}  // namespace jx::vk
