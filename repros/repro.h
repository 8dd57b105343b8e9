#pragma once
// A repro: one minimal program per documented failure, written on the public jx API. The lab
// runner (scenarios/runner.cc) calls it on a backend under a replay policy, with its trackers
// around it; the repro reports what it computed through the Run it is given.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/jx.h"

namespace jx::lab {

struct Run {
  std::string backend;    // the case's backend (also the default device during the call)
  std::string transform;  // eager | jit | value_and_grad | jit(value_and_grad)
  nlohmann::json params;  // the scenario's workload parameters (sweep values filled in)

  std::map<std::string, std::vector<double>> values;  // named results, in the order computed
  std::map<std::string, double> metrics;              // repro-specific figures (rss, cache entries, ...)
  std::map<std::string, std::vector<double>> series;  // per-call figures (memory growth)
  void value(const std::string& name, const Array& a) { values[name] = a.to_vector<double>(); }
  // Starts the measured part: dispatch, submit and buffer counts cover only what follows (the
  // inputs made before are not the failure's cost). Without a call, the whole run is measured.
  std::function<void()> on_measure;
  void measure() {
    if (on_measure) on_measure();
  }
  // Export (jxlab export): when set, the transform helpers below hand it the function they
  // would transform and its inputs, and run nothing.
  std::function<void(const FlatFn& fn, const std::vector<Array>& inputs)> on_program;

  // Parameter accessors with defaults; a present parameter of the wrong type throws Error naming it.
  double num(const std::string& key, double def) const;
  std::int64_t integer(const std::string& key, std::int64_t def) const;
  std::string str(const std::string& key, const std::string& def) const;
  DType dtype() const;  // params.dtype: "float32" | "float64" (default float32)
};

// A transform the repro does not run under (replay asks for the gradient transforms).
struct UnsupportedTransform : Error {
  using Error::Error;
};

using ReproFn = std::function<void(Run&)>;
struct Repro {
  std::string name, description;
  ReproFn fn;
  std::vector<std::string> params;      // the parameters it reads; a scenario naming another is refused
  std::vector<std::string> transforms;  // the transforms it runs under (empty: all four)
  // A combination of parameters and transform it cannot run ("" when fine).
  std::function<std::string(const nlohmann::json& params, const std::string& transform)> check;
};
const std::map<std::string, Repro>& repros();  // by name
const Repro& repro(const std::string& name);   // throws Error naming the known repros

// A scalar loss of θ under the run's transform: records "value" and, for the gradient
// transforms, "grad". value_and_grad runs as vjp then pullback, so a failure of the backward
// pass comes after the value was recorded (as in the documented reports).
void loss_under_transform(Run& r, const std::function<Array(const Array&)>& loss, const Array& theta);
// Outputs of fn under eager or jit: records "out0", "out1", ...
void outputs_under_transform(Run& r, const std::function<std::vector<Array>(const std::vector<Array>&)>& fn,
                             const std::vector<Array>& inputs);

}  // namespace jx::lab
