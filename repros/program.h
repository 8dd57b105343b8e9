#pragma once
// Programs as workloads: a program case file (a jaxpr from JAX or jx, with its inputs) run under
// the scenario's transform, and the built-in workloads exported as such files.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/text/load.h"
#include "repros/repro.h"

namespace jx::lab {

using text::placeholders;
using text::substitute;

// Runs the program case at `path` (its placeholders filled from r.params) under r.transform:
// eager/jit record out0, out1, ...; (jit)(value_and_grad) record "value" (the sum of the float
// outputs) and "grad" (one float input) or grad0, grad1, ... Inputs: the file's own when it
// has them and nothing was substituted, else generated per `inputs`:
//   {"seed": 0, "distribution": "normal" | "uniform" | "iota", "scale": 1.0, "dispose_intermediates": false}
// dispose_intermediates disposes each intermediate handle after its last use, as client code
// of the JS runtime does (`using`), so the replay switches about disposal apply to programs too.
void program_workload(Run& r, const std::string& path, const nlohmann::json& inputs);

// Traces a built-in workload (its parameters from `params`) into a program case: the jaxpr of
// the function it hands to its transform, its inputs, and its outputs on cpu. Returns the case
// as JSON in the case file layout ({name, jaxpr, inputs, outputs}).
nlohmann::json export_workload(const std::string& workload, const nlohmann::json& params, const std::string& name);

}  // namespace jx::lab
