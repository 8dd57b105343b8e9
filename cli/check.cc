// jxlab check FILE...: each program case on each backend under one transform, compared with the
// case's own outputs (eager, jit) and with the cpu oracle (the same transform on cpu; for vmap,
// the program run per example; for grad, also central differences in float64 on cpu).
#include "cli/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <regex>

#include "cli/lab_commands.h"
#include "core/instrument/instrument.h"
#include "core/jx.h"
#include "core/text/interp.h"
#include "core/text/load.h"

namespace jx::lab {
namespace {

using text::Program;
using text::Tensor;

constexpr std::int64_t kBatch = 3;  // vmap: examples stacked on a new leading axis

struct Loaded {
  text::CaseFile file;
  Program prog;
  std::vector<Tensor> inputs;
};

Loaded load(const std::string& path, const std::string& inputs_kind) {
  Loaded l{text::read_case_file(path), {}, {}};
  for (const std::string& h : text::placeholders(l.file.jaxpr))
    throw text::ParseError(fmt::format(
        "{}: the jaxpr's placeholder {{{}}} has no value (give \"params\": {{\"{}\": ...}} in the case file)", path, h,
        h));
  l.prog = text::load_program(l.file.jaxpr, path);
  if (l.file.generated_inputs) {
    l.inputs = text::generate_inputs(l.prog, 0, inputs_kind);
  } else {
    if (l.file.consts.size() != l.prog.text_consts)
      throw text::ParseError(
          fmt::format("{}: the jaxpr has {} constvars; the file gives {} values for them (\"consts\")", path,
                      l.prog.text_consts, l.file.consts.size()));
    l.inputs = l.file.consts;
    l.inputs.insert(l.inputs.end(), l.file.inputs.begin(), l.file.inputs.end());
  }
  if (l.inputs.size() != l.prog.in_avals.size())
    throw text::ParseError(
        fmt::format("{}: {} inputs given, the jaxpr takes {}", path, l.inputs.size(), l.prog.in_avals.size()));
  for (std::size_t i = 0; i < l.inputs.size(); ++i) {
    const AVal a{text::dtype_of(l.inputs[i].dtype, path), l.inputs[i].shape};
    if (!(a == l.prog.in_avals[i]))
      throw text::ParseError(
          fmt::format("{}: input {} is {}, the jaxpr takes {}", path, i, a.str(), l.prog.in_avals[i].str()));
  }
  return l;
}

std::vector<Array> arrays(const std::vector<Tensor>& ts) {
  std::vector<Array> v;
  for (const Tensor& t : ts) v.push_back(text::to_array(t));
  return v;
}
std::vector<Tensor> tensors(const std::vector<Array>& as) {
  std::vector<Tensor> v;
  for (const Array& a : as) v.push_back(text::to_tensor(a));
  return v;
}

// d/d(float inputs) of the sum of the float outputs (each summed in its own dtype, then added
// in the first float input's dtype).
std::vector<Array> grad_of(const Program& p, const std::vector<Array>& args) {
  const auto l =
      text::summed_loss([&p](const std::vector<Array>& a) { return text::run_program(p, a); }, args, p.text_consts);
  if (l.x.empty()) return {};
  auto [y, lin] = vjp_flat(l.loss, l.x);
  return lin.transpose({np::ones({}, l.dtype)});
}

std::vector<Array> apply(const Program& p, const std::string& transform, const std::vector<Array>& args) {
  if (transform == "eager") return text::run_program(p, args);
  if (transform == "jit") return jit([&p](const std::vector<Array>& a) { return text::run_program(p, a); })(args);
  if (transform == "grad") return grad_of(p, args);
  if (transform == "jit(grad)") return jit([&p](const std::vector<Array>& a) { return grad_of(p, a); })(args);
  if (transform == "vmap") {
    std::vector<std::optional<std::int64_t>> axes(args.size(), 0);
    return vmap_flat([&p](const std::vector<Array>& a) { return text::run_program(p, a); }, axes,
                     std::vector<std::int64_t>(p.out_avals.size(), 0))(args);
  }
  throw Error(fmt::format("unknown transform '{}'", transform));
}

// vmap inputs: kBatch examples, floats scaled by 1, 1.25, 1.5 (indices and flags repeated).
std::vector<Tensor> batched(const std::vector<Tensor>& in, std::int64_t k = -1) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor b{t.dtype, t.shape, {}};
    if (k < 0) b.shape.insert(b.shape.begin(), kBatch);
    const bool fl = t.dtype == "float32" || t.dtype == "float64";
    for (std::int64_t e = k < 0 ? 0 : k; e < (k < 0 ? kBatch : k + 1); ++e)
      for (double v : t.data) b.data.push_back(fl ? v * (1.0 + 0.25 * static_cast<double>(e)) : v);
    out.push_back(std::move(b));
  }
  return out;
}

// The oracle for vmap: each example on cpu, eagerly, stacked.
std::vector<Tensor> vmap_oracle(const Program& p, const std::vector<Tensor>& in) {
  DefaultDeviceScope cpu("cpu");
  std::vector<Tensor> out;
  for (std::int64_t k = 0; k < kBatch; ++k) {
    auto r = tensors(text::run_program(p, arrays(batched(in, k))));
    if (out.empty()) {
      out = r;
      for (Tensor& t : out) t.shape.insert(t.shape.begin(), kBatch);
    } else {
      for (std::size_t i = 0; i < r.size(); ++i)
        out[i].data.insert(out[i].data.end(), r[i].data.begin(), r[i].data.end());
    }
  }
  return out;
}

struct Diff {
  double abs = 0, rel = 0;
  bool ok = true;
  std::string why;
};

// numpy.allclose per output (nan equal to nan), and the largest abs/rel differences.
std::vector<Diff> compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol, double atol) {
  std::vector<Diff> d;
  for (std::size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    Diff x;
    if (i >= got.size() || i >= want.size() || got[i].shape != want[i].shape) {
      x.ok = false;
      x.why = i < got.size() && i < want.size()
                  ? fmt::format("shape {} vs {}", shape_str(got[i].shape), shape_str(want[i].shape))
                  : "output count";
      d.push_back(x);
      continue;
    }
    const bool exact = want[i].dtype == "int32" || want[i].dtype == "int64" || want[i].dtype == "bool";
    for (std::size_t k = 0; k < got[i].data.size(); ++k) {
      const double a = got[i].data[k], b = want[i].data[k];
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      const double e = std::fabs(a - b), r = e / std::max(std::fabs(b), 1e-300);
      x.abs = std::max(x.abs, std::isnan(e) ? INFINITY : e);
      x.rel = std::max(x.rel, std::isnan(r) ? INFINITY : r);
      if (exact || !(e <= atol + rtol * std::fabs(b))) x.ok = false;
    }
    d.push_back(x);
  }
  return d;
}

// f32 programs re-read as f64, for central differences.
std::string as_f64(const std::string& jaxpr) {
  return std::regex_replace(std::regex_replace(jaxpr, std::regex("\\bf32\\["), "f64["), std::regex("\\bfloat32\\b"),
                            "float64");
}

// Central differences of the summed outputs in float64 on cpu, at up to 24 elements per input.
std::vector<Diff> fd_check(const Loaded& l, const std::vector<Tensor>& grads) {
  DefaultDeviceScope cpu("cpu");
  const Program p64 = text::load_program(as_f64(l.file.jaxpr), l.file.path.string() + " (as f64)");
  std::vector<Tensor> in = l.inputs;
  for (Tensor& t : in)
    if (t.dtype == "float32") t.dtype = "float64";
  auto total = [&](const std::vector<Tensor>& x) {
    double s = 0;
    for (const Tensor& o : tensors(text::run_program(p64, arrays(x))))
      if (o.dtype == "float64")
        for (double v : o.data) s += v;
    return s;
  };
  std::vector<Diff> out;
  std::size_t g = 0;
  for (std::size_t i = l.prog.text_consts; i < in.size(); ++i) {  // constvars: constants
    if (in[i].dtype != "float64") continue;
    Diff d;
    double scale = 1;
    const std::size_t n = in[i].data.size(), stride = std::max<std::size_t>(1, n / 24);
    for (std::size_t k = 0; k < n; k += stride) {
      const double x0 = in[i].data[k], h = 1e-6 * std::max(1.0, std::fabs(x0));
      std::vector<Tensor> up = in, dn = in;
      up[i].data[k] = x0 + h;
      dn[i].data[k] = x0 - h;
      const double fd = (total(up) - total(dn)) / (2 * h), got = grads.at(g).data[k];
      scale = std::max(scale, std::fabs(fd));
      d.abs = std::max(d.abs, std::fabs(got - fd));
    }
    d.rel = d.abs / scale;
    d.ok = d.rel <= (l.inputs[i].dtype == "float32" ? 2e-3 : 1e-5);
    out.push_back(d);
    ++g;
  }
  return out;
}

struct CheckRow {
  std::string file, backend, status;  // status: ok, mismatch, error, skipped
  std::vector<Diff> vs_file, vs_oracle, vs_fd;
  std::size_t dispatches = 0;
  int max_buffers = 0;
  std::vector<std::string> scan_paths;
  std::string note;
};

std::pair<double, double> tolerances(const Loaded& l) {
  bool f32 = false;
  for (const AVal& a : l.prog.out_avals) f32 |= a.dtype == DType::float32;
  for (const AVal& a : l.prog.in_avals) f32 |= a.dtype == DType::float32;
  const double rtol = l.file.rtol > 0 ? l.file.rtol : f32 ? 2e-5 : 1e-10;
  const double atol = l.file.atol > 0 ? l.file.atol : f32 ? 2e-6 : 1e-12;
  return {rtol, atol};
}

std::vector<Tensor> run_on(const Loaded& l, const std::string& backend, const std::string& transform, CheckRow* row) {
  DefaultDeviceScope scope(backend);
  const std::vector<Tensor> in = transform == "vmap" ? batched(l.inputs) : l.inputs;
  std::vector<std::string> paths;
  trace::Subscription sub([&](const trace::Event& e) {
    if (e.kind == trace::EventKind::scan_path) paths.push_back(e.name);
  });
  trace::DispatchTracker dt;
  auto out = tensors(apply(l.prog, transform, arrays(in)));
  if (row) {
    row->dispatches = dt.dispatches();
    row->max_buffers = dt.max_buffers();
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    row->scan_paths = paths;
  }
  return out;
}

bool all_ok(const std::vector<Diff>& d) {
  return std::all_of(d.begin(), d.end(), [](const Diff& x) { return x.ok; });
}

CheckRow check_one(const Loaded& l, const std::string& backend, const CheckArgs& a, const std::vector<Tensor>& oracle) {
  CheckRow r{l.file.name, backend, "ok", {}, {}, {}, 0, 0, {}, ""};
  if (!backend_available(backend)) {
    r.status = "skipped";
    r.note = "backend not available";
    return r;
  }
  auto [rtol, atol] = tolerances(l);
  try {
    const auto got = run_on(l, backend, a.transform, &r);
    if (l.file.outputs && (a.transform == "eager" || a.transform == "jit"))
      r.vs_file = compare(got, *l.file.outputs, rtol, atol);
    const double grad_tol =
        a.transform.find("grad") != std::string::npos ? 10 : 1;  // accumulated rounding in the backward pass
    r.vs_oracle = compare(got, oracle, rtol * grad_tol, atol * grad_tol);
    if (a.transform.find("grad") != std::string::npos && backend == "cpu") try {
        r.vs_fd = fd_check(l, got);
      } catch (const text::ParseError& e) {  // e.g. erf, which jx has for float32 only
        r.note = fmt::format("no central differences: the program does not load as float64: {}", e.what());
      }
    if (!all_ok(r.vs_file) || !all_ok(r.vs_oracle) || !all_ok(r.vs_fd)) r.status = "mismatch";
    if (!a.out.empty())
      text::write_outputs(std::filesystem::path(a.out) / fmt::format("{}.{}.json", l.file.name, backend), got);
  } catch (const std::exception& e) {
    r.status = "error";
    r.note = e.what();
  }
  return r;
}

std::string worst(const std::vector<Diff>& d) {
  if (d.empty()) return "-";
  std::vector<std::string> parts;
  for (const Diff& x : d) parts.push_back(x.why.empty() ? fmt::format("{:.1e}/{:.1e}", x.abs, x.rel) : x.why);
  return fmt::format("{}", fmt::join(parts, " "));
}

void print_row(const CheckRow& r) {
  fmt::print("{:<28} {:<7} {:<9} {:<24} {:<24} {:>6} {:>4} {}\n", r.file, r.backend, r.status, worst(r.vs_file),
             worst(r.vs_oracle), r.dispatches, r.max_buffers,
             r.scan_paths.empty() ? "-" : fmt::format("{}", fmt::join(r.scan_paths, ",")));
  if (!r.vs_fd.empty())
    fmt::print("{:<28} {:<7} {:<9} central differences (f64): {}\n", "", "", all_ok(r.vs_fd) ? "ok" : "mismatch",
               worst(r.vs_fd));
  if (!r.note.empty()) fmt::print("{:<28} {}\n", "", r.note);
  std::fflush(stdout);
}

std::vector<std::string> backends_of(const std::string& b) {
  if (b == "all") return {"cpu", "native", "vulkan"};
  return {b};
}

}  // namespace

int cmd_check(const CheckArgs& a) {
  static const std::vector<std::string> kTransforms{"eager", "jit", "grad", "jit(grad)", "vmap"};
  if (std::find(kTransforms.begin(), kTransforms.end(), a.transform) == kTransforms.end())
    throw UsageError(fmt::format("--transform {}: expected one of eager, jit, grad, jit(grad), vmap", a.transform));
  for (const std::string& b : backends_of(a.backend))
    if (b != "cpu" && b != "native" && b != "vulkan")
      throw UsageError(fmt::format("--backend {}: expected cpu, native, vulkan or all", b));
  if (!a.out.empty()) std::filesystem::create_directories(a.out);
  fmt::print("{:<28} {:<7} {:<9} {:<24} {:<24} {:>6} {:>4} {}\n", "file", "backend", "status", "vs file (abs/rel)",
             "vs cpu oracle", "disp", "bufs", "scan paths");
  bool load_failed = false, failed = false;
  for (const std::string& f : a.files) {
    std::optional<Loaded> l;
    std::vector<Tensor> oracle;
    try {
      l = load(f, a.inputs);
      DefaultDeviceScope cpu("cpu");
      oracle = a.transform == "vmap" ? vmap_oracle(l->prog, l->inputs)
                                     : run_on(*l, "cpu",
                                              a.transform == "jit(grad)" ? "grad"
                                              : a.transform == "jit"     ? "eager"
                                                                         : a.transform,
                                              nullptr);
    } catch (const std::exception& e) {  // jx errors, and any other (a bad allocation) alike
      fmt::print("{:<28} {:<7} {:<9} {}\n", std::filesystem::path(f).stem().string(), "-", l ? "error" : "load",
                 e.what());
      (l ? failed : load_failed) = true;
      continue;
    }
    for (const std::string& b : backends_of(a.backend)) {
      CheckRow r = check_one(*l, b, a, oracle);
      print_row(r);
      failed |= r.status == "mismatch" || r.status == "error";
    }
  }
  return load_failed ? 2 : failed ? 1 : 0;
}

}  // namespace jx::lab
