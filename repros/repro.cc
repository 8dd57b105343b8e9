// The repro registry and the transforms every repro shares.
#include "repros/repro.h"

#include <fmt/format.h>

namespace jx::lab {

double Run::num(const std::string& key, double def) const {
  if (!params.contains(key)) return def;
  if (!params[key].is_number())
    throw Error(fmt::format("parameter '{}' must be a number, got {}", key, params[key].dump()));
  return params[key].get<double>();
}
std::int64_t Run::integer(const std::string& key, std::int64_t def) const {
  if (!params.contains(key)) return def;
  if (!params[key].is_number_integer())
    throw Error(fmt::format("parameter '{}' must be an integer, got {}", key, params[key].dump()));
  return params[key].get<std::int64_t>();
}
std::string Run::str(const std::string& key, const std::string& def) const {
  if (!params.contains(key)) return def;
  if (!params[key].is_string())
    throw Error(fmt::format("parameter '{}' must be a string, got {}", key, params[key].dump()));
  return params[key].get<std::string>();
}
DType Run::dtype() const {
  const std::string d = str("dtype", "float32");
  if (d == "float32") return DType::float32;
  if (d == "float64") return DType::float64;
  throw Error(fmt::format("parameter 'dtype' must be float32 or float64, got '{}'", d));
}

void loss_under_transform(Run& r, const std::function<Array(const Array&)>& loss, const Array& theta) {
  if (r.on_program)
    return r.on_program([&](const std::vector<Array>& in) { return std::vector<Array>{loss(in.at(0))}; }, {theta});
  r.measure();
  if (r.transform == "eager") {
    r.value("value", loss(theta));
  } else if (r.transform == "jit") {
    r.value("value", jit(loss)(theta));
  } else if (r.transform == "value_and_grad") {
    auto [v, pullback] = vjp(loss, theta);
    r.value("value", v);
    r.value("grad", std::get<0>(pullback(np::ones_like(v))));
  } else if (r.transform == "jit(value_and_grad)") {
    auto [v, g] = jit(value_and_grad(loss))(theta);
    r.value("value", v);
    r.value("grad", g);
  } else {
    throw UnsupportedTransform(
        fmt::format("transform '{}' is not one of eager, jit, value_and_grad, jit(value_and_grad)", r.transform));
  }
}

void outputs_under_transform(Run& r, const std::function<std::vector<Array>(const std::vector<Array>&)>& fn,
                             const std::vector<Array>& inputs) {
  if (r.on_program) return r.on_program(fn, inputs);
  r.measure();
  std::vector<Array> out;
  if (r.transform == "eager")
    out = fn(inputs);
  else if (r.transform == "jit")
    out = jit(fn)(inputs);
  else
    throw UnsupportedTransform(fmt::format("transform '{}' is not one of eager, jit for this repro", r.transform));
  for (std::size_t i = 0; i < out.size(); ++i) r.value(fmt::format("out{}", i), out[i]);
}

void register_losses(std::map<std::string, Repro>& m);
void register_dispatch(std::map<std::string, Repro>& m);
void register_memory(std::map<std::string, Repro>& m);
void register_selftest(std::map<std::string, Repro>& m);
void register_dlm_peer(std::map<std::string, Repro>& m);

const std::map<std::string, Repro>& repros() {
  static const std::map<std::string, Repro> m = [] {
    std::map<std::string, Repro> r;
    register_losses(r);
    register_dispatch(r);
    register_memory(r);
    register_selftest(r);
    register_dlm_peer(r);
    return r;
  }();
  return m;
}

const Repro& repro(const std::string& name) {
  auto it = repros().find(name);
  if (it != repros().end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, rp] : repros()) names.push_back(n);
  throw Error(fmt::format("unknown workload '{}' (known: {})", name, fmt::join(names, ", ")));
}

}  // namespace jx::lab
