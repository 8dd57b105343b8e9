#pragma once
// Programs as data: jaxpr text (JAX's or jx's own) loaded into a typechecked jx Jaxpr, and the
// program case files that carry one with its inputs and expected outputs.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/jaxpr.h"
#include "core/trace/builder.h"
#include "core/text/syntax.h"

namespace jx::text {

struct Program {
  std::string source;  // file name, for messages
  std::shared_ptr<const text::Jaxpr> syntax;
  jx::Jaxpr jaxpr;                        // constvars: the text's constvars; invars: its invars
  std::vector<Array> consts;              // values of jaxpr.constvars beyond the text's (none for text)
  std::size_t text_consts = 0;            // the text's constvars: leading inputs of run()
  std::vector<AVal> in_avals, out_avals;  // the text's constvars then invars; its outputs
};

// Parses, traces through the rules and typechecks. Throws ParseError (file:line:column) for text
// that does not parse or does not type, naming an unsupported primitive and its line.
Program load_program(std::string_view text, std::string_view file = "<text>");
// Applies the program to its inputs (the text's constvars' values first). Traceable: call it
// under jit, grad or vmap.
std::vector<Array> run_program(const Program& p, const std::vector<Array>& args);

// The scalar loss that `jxlab check --transform grad` and the program workloads differentiate:
// the sum of fn's float outputs (each summed, then added in the first float argument's dtype) as
// a function of the float arguments after the first `consts` (the constvars' values, constants).
// x: those arguments' values; empty when there is none.
struct SummedLoss {
  FlatFn loss;
  std::vector<Array> x;
  DType dtype = DType::float32;
};
SummedLoss summed_loss(FlatFn fn, std::vector<Array> args, std::size_t consts);

// A host tensor as case files hold it: row-major values as doubles (bool 0/1, int32 exact).
struct Tensor {
  std::string dtype;  // float32, float64, int32, bool, or int64 (read as int32)
  Shape shape;
  std::vector<double> data;
};
Array to_array(const Tensor& t);
Tensor to_tensor(const Array& a);

// The {name} placeholders of a jaxpr text (a sweep substitutes sizes into its shapes), and the
// text with each replaced by params[name] (an integer; Error naming a missing one).
std::set<std::string> placeholders(const std::string& jaxpr);
std::string substitute(const std::string& jaxpr, const nlohmann::json& params);

// Every integer equal to `size` in a type's dims ("f32[100,2]"), a parameter tuple ("shape=(100,
// 2)") or a length ("length=100") replaced by {key}: a sized program made resizable.
std::string with_placeholder(const std::string& jaxpr, std::int64_t size, const std::string& key);

// A tensor in the case file layout {dtype, shape, data} (NaN and infinities as Python's json
// writes them: "NaN", "Infinity", "-Infinity").
std::string tensor_json(const Tensor& t);  // JSON text

// {"jaxpr": text, "inputs": [...], "outputs": [...] (optional), "rtol"/"atol" (optional),
// "consts": [...] (the values of the jaxpr's constvars, when it has any), "params": {"n": 100}
// (sizes for {n} placeholders in the text)}, or a
// bare .jaxpr file (inputs generated: seeded normal floats, small non-negative integers, ...).
struct CaseFile {
  std::filesystem::path path;
  std::string name;  // file stem
  std::string jaxpr;
  nlohmann::json params = nlohmann::json::object();  // values of the text's {name} placeholders
  std::string jaxpr_template;                        // the text as written, placeholders and all (jaxpr: substituted)
  std::vector<Tensor> consts;                        // values of the text's constvars (JAX's captured arrays)
  std::vector<Tensor> inputs;
  std::optional<std::vector<Tensor>> outputs;
  double rtol = 0, atol = 0;  // 0: the checker's default for the dtype
  bool generated_inputs = false;
};
CaseFile read_case_file(const std::filesystem::path& p);  // throws ParseError
// kind: normal (seeded), uniform in [-1, 1) (seeded), or iota (0, 1, 2, ... row-major); integers
// are small (0..2) unless iota, bools random or alternating.
std::vector<Tensor> generate_inputs(const Program& p, unsigned seed = 0, const std::string& kind = "normal");
// Writes {"outputs": [...]} (the case file's layout) to `p`, atomically.
void write_outputs(const std::filesystem::path& p, const std::vector<Tensor>& outs);
// The case file's own layout: {"name", "jaxpr", "inputs", "outputs"}.
void write_case_file(const std::filesystem::path& p, const std::string& name, const std::string& jaxpr,
                     const std::vector<Tensor>& in, const std::vector<Tensor>& out);

}  // namespace jx::text
