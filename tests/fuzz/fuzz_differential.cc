// Differential fuzz target: the input bytes pick a small random program (a chain of primitives
// over a random shape and dtype (float64, float32, int32), run eagerly, under jit, grad, jit(grad) or inside lax.scan);
// it runs on cpu (the oracle), native and vulkan, and every backend must agree within the
// dtype's tolerance, and nothing may leak. A clear jx error from the oracle means the program
// is invalid (skipped); a backend failing where the oracle did not is a finding.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/jx.h"
#include "core/text/load.h"
#include "core/trace/builder.h"
#include "leakcheck/leakcheck.h"
#include "tests/fuzz/fuzz_targets.h"

namespace jx::fuzz {
namespace {

struct Bytes {
  const std::uint8_t* p;
  std::size_t n, i = 0;
  std::uint8_t next() { return i < n ? p[i++] : 0; }
  int pick(int k) { return next() % k; }
};

enum class Mode { eager, jit, grad, jit_grad, scan, count };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::eager: return "eager";
    case Mode::jit: return "jit";
    case Mode::grad: return "grad";
    case Mode::jit_grad: return "jit(grad)";
    case Mode::scan: return "scan";
    case Mode::count: break;
  }
  return "?";
}

// One step of the chain: reads registers a, b, c (indices modulo the register count), appends
// its result. Every op keeps values bounded and broadcastable to the base shape (reductions keep
// their dims), so any sequence is a valid program.
struct Op {
  int kind, a, b, c, axis;
};
constexpr int kOps = 17;
const char* op_name(int k) {
  static const char* names[kOps] = {"add",       "sub",       "mul",      "div1p",    "maximum",   "minimum",
                                    "neg",       "tanh",      "sin",      "cos",      "exp_tanh",  "log1p_abs",
                                    "sqrt_abs1", "where_gt0", "sum_keep", "max_keep", "concat_max"};
  return names[k];
}

Array apply_op(const Op& o, const std::vector<Array>& r) {
  const Array& a = r[static_cast<std::size_t>(o.a) % r.size()];
  const Array& b = r[static_cast<std::size_t>(o.b) % r.size()];
  const Array& c = r[static_cast<std::size_t>(o.c) % r.size()];
  const auto rank = static_cast<std::int64_t>(a.ndim());
  const std::vector<std::int64_t> ax =
      rank == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{o.axis % rank};
  switch (o.kind) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return np::tanh(a) * b;
    case 3: return a / (np::square(b) + 1.0);
    case 4: return np::maximum(a, b);
    case 5: return np::minimum(a, b);
    case 6: return np::negative(a);
    case 7: return np::tanh(a);
    case 8: return np::sin(a);
    case 9: return np::cos(a);
    case 10: return np::exp(np::tanh(a));
    case 11: return np::log1p(np::abs(a));
    case 12: return np::sqrt(np::abs(a) + 1.0);
    case 13: return np::where(np::greater(a, 0.0), b, c);
    case 14: return rank == 0 ? a : np::sum(a, ax, true);
    case 15: return rank == 0 ? a : np::max(a, ax, true);
    case 16: return rank == 0 ? a + b : np::max(np::concatenate({a, b + 0.5}, ax[0]), ax, true);
  }
  return a;
}

struct Program {
  DType dtype = DType::float64;
  Shape shape;
  int inputs = 1;
  std::vector<std::uint8_t> seeds;
  std::vector<Op> ops;
  Mode mode = Mode::eager;

  std::string str() const {
    std::string s = fmt::format("{} {} over {} input(s) of {}{}:", mode_name(mode), dtype_name(dtype), inputs,
                                dtype_name(dtype), fmt::format("[{}]", fmt::join(shape, ",")));
    for (const Op& o : ops) s += fmt::format(" {}(r{},r{},r{};axis {})", op_name(o.kind), o.a, o.b, o.c, o.axis);
    return s;
  }

  // The chain over registers that start as `in`; returns the last register.
  Array chain(const std::vector<Array>& in) const {
    std::vector<Array> r = in;
    for (const Op& o : ops) r.push_back(apply_op(o, r));
    return r.back();
  }

  std::vector<Array> make_inputs() const {
    std::vector<Array> xs;
    for (int k = 0; k < inputs; ++k) {
      std::vector<double> v(static_cast<std::size_t>(numel(shape)));
      for (std::size_t i = 0; i < v.size(); ++i)  // values in [-2, 2], distinct per input
        v[i] = 2.0 * std::sin(0.7 * static_cast<double>(i) + 1.3 * k + 0.05 * seeds[static_cast<std::size_t>(k)]);
      if (dtype == DType::int32)
        for (double& x : v) x = std::round(x);  // -2 ... 2: products of 8 stay far from overflow
      xs.push_back(np::array(v, shape, dtype));
    }
    return xs;
  }

  std::vector<Array> run(const std::vector<Array>& xs) const {
    auto loss = [this](const std::vector<Array>& in) { return np::sum(chain(in)); };
    switch (mode) {
      case Mode::eager: return {chain(xs)};
      case Mode::jit: return {jit([this](const std::vector<Array>& in) { return chain(in); })(xs)};
      case Mode::grad: return {grad([&](const Array& x0) { return loss(with_first(xs, x0)); })(xs[0])};
      case Mode::jit_grad: return {jit(grad([&](const Array& x0) { return loss(with_first(xs, x0)); }))(xs[0])};
      case Mode::scan: {
        // carry: the second input summed over axis 0; xs: the first input's rows
        Array init = np::sum(xs[std::min<std::size_t>(1, xs.size() - 1)], std::vector<std::int64_t>{0});
        auto [c, ys] = lax::scan(
            [this](const Array& carry, const Array& x) {
              Array out = np::broadcast_to(chain({carry, x}), carry.shape());
              return std::pair<Array, Array>{np::tanh(out), out};
            },
            init, xs[0]);
        return {c, ys};
      }
      case Mode::count: break;
    }
    return {};
  }

  static std::vector<Array> with_first(std::vector<Array> xs, const Array& x0) {
    xs[0] = x0;
    return xs;
  }
};

Program decode(const std::uint8_t* data, std::size_t size) {
  Bytes b{data, size};
  Program p;
  const int dt = b.pick(3);
  p.dtype = dt == 0 ? DType::float64 : dt == 1 ? DType::float32 : DType::int32;
  p.mode = static_cast<Mode>(b.pick(static_cast<int>(Mode::count)));
  // integer inputs: eager or jit (grad needs float inputs; a scan's carry would change dtype);
  // the ops promote to float where they must, which the backends must do alike
  if (p.dtype == DType::int32) p.mode = static_cast<int>(p.mode) % 2 ? Mode::jit : Mode::eager;
  const int rank = p.mode == Mode::scan ? 1 + b.pick(3) : b.pick(4);
  std::vector<std::int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(1 + b.pick(5));
  p.shape = Shape(dims);
  p.inputs = 1 + b.pick(3);
  for (int k = 0; k < p.inputs; ++k) p.seeds.push_back(b.next());
  const int n = 1 + b.pick(8);
  for (int i = 0; i < n; ++i) p.ops.push_back({b.pick(kOps), b.next(), b.next(), b.next(), b.next()});
  return p;
}

struct Want {
  DType dtype;
  std::vector<double> values;
};

// Same dtype as the oracle, and |got - want| <= tol * (1 + max |want|) elementwise with the
// output dtype's tolerance (exact for int32 and bool); NaN only where the oracle has NaN.
std::string compare(const std::vector<Array>& got, const std::vector<Want>& want) {
  if (got.size() != want.size()) return fmt::format("{} outputs, oracle {}", got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (got[k].dtype() != want[k].dtype)
      return fmt::format("output {}: {}, oracle {}", k, dtype_name(got[k].dtype()), dtype_name(want[k].dtype));
    const double tol = want[k].dtype == DType::float32 ? 2e-4 : want[k].dtype == DType::float64 ? 1e-9 : 0.0;
    const auto g = got[k].to_vector<double>();
    const auto& w_k = want[k].values;
    if (g.size() != w_k.size()) return fmt::format("output {}: {} elements, oracle {}", k, g.size(), w_k.size());
    double scale = 1;
    for (double w : w_k) scale = std::max(scale, std::isfinite(w) ? 1 + std::abs(w) : 1.0);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double w = w_k[i];
      if (std::isnan(w) && std::isnan(g[i])) continue;
      if (std::isinf(w) && g[i] == w) continue;
      if (!(std::abs(g[i] - w) <= tol * scale))
        return fmt::format("output {} element {}: {} vs oracle {}", k, i, g[i], w);
    }
  }
  return "";
}

// The transform `jxlab reduce` runs a finding's traced program under: its jit modes stay
// jitted (the backends' compiled kernels are where they differ); grad and scan are traced into
// the program itself.
const char* reduce_transform(Mode m) { return m == Mode::jit || m == Mode::jit_grad ? "jit" : "eager"; }

}  // namespace

nlohmann::json program_case(const std::uint8_t* data, std::size_t size, const std::string& backend) {
  const Program p = decode(data, size);
  DefaultDeviceScope cpu("cpu");
  const std::vector<Array> xs = p.make_inputs();
  std::vector<AVal> avals;
  for (const Array& x : xs) avals.push_back(x.aval());
  // the program as the mode runs it, without the mode's own jit (the reducer applies it)
  Program eager = p;
  if (p.mode == Mode::jit) eager.mode = Mode::eager;
  if (p.mode == Mode::jit_grad) eager.mode = Mode::grad;
  const ClosedJaxpr traced = make_jaxpr_flat([&](const std::vector<Array>& in) { return eager.run(in); }, avals);
  auto list = [](const std::vector<Array>& v) {
    nlohmann::json l = nlohmann::json::array();
    for (const Array& a : v) l.push_back(nlohmann::json::parse(text::tensor_json(text::to_tensor(a))));
    return l;
  };
  nlohmann::json c = {{"name", "differential finding"},
                      {"description", fmt::format("{} disagrees with cpu on {}", backend, p.str())},
                      {"jaxpr", traced.jaxpr.str()},
                      {"inputs", list(xs)},
                      {"outputs", list(eval_jaxpr(traced.jaxpr, traced.consts, xs))},
                      {"reduce", {{"backend", backend}, {"transform", reduce_transform(p.mode)}}}};
  if (!traced.consts.empty()) c["consts"] = list(traced.consts);
  return c;
}

std::string describe_program(const std::uint8_t* data, std::size_t size) { return decode(data, size).str(); }

int differential(const std::uint8_t* data, std::size_t size) {
  const Program p = decode(data, size);
  const auto base = leak_baseline("fuzz differential");
  {
    std::vector<Want> want;
    try {
      DefaultDeviceScope cpu("cpu");
      for (const Array& a : p.run(p.make_inputs())) want.push_back({a.dtype(), a.to_vector<double>()});
    } catch (const Error&) {
      return 0;  // not a valid program for the oracle either
    }
    for (const char* be : {"native", "vulkan"}) {
      if (!backend_available(be)) continue;
      std::string mismatch;
      try {
        DefaultDeviceScope scope(be);
        mismatch = compare(p.run(p.make_inputs()), want);
      } catch (const Error& e) {
        mismatch = fmt::format("failed where cpu did not: {}", e.what());
      }
      if (!mismatch.empty()) {
        // the finding as a program case too, for scripts/fuzz to reduce with jxlab reduce
        if (const char* dir = std::getenv("JX_FUZZ_PROGRAMS"); dir && *dir) {
          std::filesystem::create_directories(dir);
          std::ofstream(std::filesystem::path(dir) /
                        fmt::format("{}-{:016x}.json", be, std::hash<std::string>{}(p.str())))
              << program_case(data, size, be).dump(1) << "\n";
        }
        finding(fmt::format("differential: {} disagrees with cpu on {}: {}", be, p.str(), mismatch));
      }
    }
  }
  clear_caches();  // cached programs hold slots (captured constants)
  if (auto leaked = leaked_since(base); !leaked.empty())
    finding(fmt::format("differential: {} leaked: {}", p.str(), leak_report("fuzz", leaked)));
  return 0;
}

}  // namespace jx::fuzz
