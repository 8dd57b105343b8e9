#include "repros/program.h"

#include <fmt/format.h>
#include <random>
#include <regex>

#include "core/text/interp.h"
#include "core/text/load.h"
#include "core/trace/builder.h"

namespace jx::lab {
namespace {

using nlohmann::json;

// The top-level equations with intermediates disposed after their last use.
std::vector<Array> run_disposing(const text::Program& p, const std::vector<Array>& args) {
  const Jaxpr& j = p.jaxpr;
  std::vector<Array> env(j.avals.size());
  std::vector<std::size_t> last(j.avals.size(), 0);
  std::vector<bool> keep(j.avals.size(), false);
  for (std::size_t i = 0; i < j.eqns.size(); ++i)
    for (const jx::Atom& a : j.eqns[i].in)
      if (!a.is_literal()) last[a.var] = i;
  for (const jx::Atom& a : j.outs)
    if (!a.is_literal()) keep[a.var] = true;
  std::size_t k = 0;
  for (int v : j.constvars) env[v] = args.at(k++), keep[v] = true;
  for (int v : j.invars) env[v] = args.at(k++), keep[v] = true;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    std::vector<Array> in;
    for (const jx::Atom& a : e.in) in.push_back(a.is_literal() ? literal_array(a) : env[a.var]);
    auto out = bind(e.prim, in, e.params);
    for (std::size_t o = 0; o < out.size(); ++o) env[e.out[o]] = std::move(out[o]);
    for (const jx::Atom& a : e.in)
      if (!a.is_literal() && !keep[a.var] && last[a.var] == i && !env[a.var].is_disposed()) env[a.var].dispose();
  }
  std::vector<Array> res;
  for (const jx::Atom& a : j.outs) res.push_back(a.is_literal() ? literal_array(a) : env[a.var]);
  return res;
}

std::vector<text::Tensor> generated(const text::Program& p, const json& spec) {
  const unsigned seed = spec.value("seed", 0u);
  const std::string dist = spec.value("distribution", std::string("normal"));
  const double scale = spec.value("scale", 1.0);
  auto in = text::generate_inputs(p, seed, dist);
  for (auto& t : in)
    if (t.dtype == "float32" || t.dtype == "float64")
      for (double& v : t.data) v *= scale;
  return in;
}

// value = the sum of the float outputs; grads with respect to the float inputs (the first
// `consts` are the program's constvars: constants)
void value_and_grad_of(Run& r, const FlatFn& fn, const std::vector<Array>& in, std::size_t consts) {
  const auto l = text::summed_loss(fn, in, consts);
  if (l.x.empty()) throw Error("value_and_grad: the program has no float inputs");
  const DType acc = l.dtype;
  const FlatFn& loss = l.loss;
  FlatFn both = [&](const std::vector<Array>& x) {
    auto [y, lin] = vjp_flat(loss, x);
    std::vector<Array> out = y;
    for (const Array& g : lin.transpose({np::ones({}, acc)})) out.push_back(g);
    return out;
  };
  const std::vector<Array>& x = l.x;
  r.measure();
  std::vector<Array> out;
  if (r.transform == "jit(value_and_grad)") {
    out = jit(both)(x);
  } else {  // vjp, then the pullback: the value is recorded before the backward pass runs
    auto [y, lin] = vjp_flat(loss, x);
    r.value("value", y[0]);
    out = y;
    for (const Array& g : lin.transpose({np::ones({}, acc)})) out.push_back(g);
  }
  r.value("value", out[0]);
  for (std::size_t k = 1; k < out.size(); ++k) r.value(x.size() == 1 ? "grad" : fmt::format("grad{}", k - 1), out[k]);
}

}  // namespace

void program_workload(Run& r, const std::string& path, const json& spec) {
  const auto cf = text::read_case_file(path);
  const bool sized = !placeholders(cf.jaxpr_template).empty();
  json values = cf.params;  // the file's own sizes, overridden by the scenario's
  for (auto it = r.params.begin(); it != r.params.end(); ++it) values[it.key()] = it.value();
  const bool resized = values != json(cf.params);
  const auto p = std::make_shared<const text::Program>(text::load_program(substitute(cf.jaxpr_template, values), path));
  std::vector<text::Tensor> ts;
  if (!(sized && resized) && !cf.generated_inputs && !spec.contains("seed") && !spec.contains("distribution")) {
    ts = cf.consts;
    ts.insert(ts.end(), cf.inputs.begin(), cf.inputs.end());
  } else {
    ts = generated(*p, spec);
  }
  std::vector<Array> in;
  for (const auto& t : ts) in.push_back(text::to_array(t));
  const bool dispose = spec.value("dispose_intermediates", false);
  FlatFn fn = [p, dispose](const std::vector<Array>& a) {
    return dispose ? run_disposing(*p, a) : text::run_program(*p, a);
  };
  if (r.transform == "eager" || r.transform == "jit") return outputs_under_transform(r, fn, in);
  if (r.transform == "value_and_grad" || r.transform == "jit(value_and_grad)")
    return value_and_grad_of(r, fn, in, p->text_consts);
  throw UnsupportedTransform(
      fmt::format("transform '{}' is not one of eager, jit, value_and_grad, jit(value_and_grad)", r.transform));
}

json export_workload(const std::string& workload, const json& params, const std::string& name) {
  DefaultDeviceScope cpu("cpu");
  Run r;
  r.backend = "cpu";
  r.transform = "eager";
  r.params = params;
  std::optional<ClosedJaxpr> traced;
  std::vector<Array> inputs;
  r.on_program = [&](const FlatFn& fn, const std::vector<Array>& in) {
    std::vector<AVal> avals;
    for (const Array& a : in) avals.push_back(a.aval());
    traced = make_jaxpr_flat(fn, avals);
    inputs = in;
  };
  repro(workload).fn(r);
  if (!traced)
    throw Error(fmt::format("workload {} does not hand a program to its transform; it cannot be exported", workload));
  // captured constants stay constvars, their values in "consts" (as JAX's cases hold them):
  // constants, not arguments, for the gradient transforms
  const auto out = eval_jaxpr(traced->jaxpr, traced->consts, inputs);
  auto list = [](const std::vector<Array>& v) {
    json l = json::array();
    for (const Array& a : v) l.push_back(json::parse(text::tensor_json(text::to_tensor(a))));
    return l;
  };
  json c = {{"name", name},
            {"workload", workload},
            {"jaxpr", traced->jaxpr.str()},
            {"inputs", list(inputs)},
            {"outputs", list(out)}};
  if (!traced->consts.empty()) c["consts"] = list(traced->consts);
  return c;
}

}  // namespace jx::lab
