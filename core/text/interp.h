#pragma once
// Evaluates parsed jaxpr text with jx operations: each equation's primitive name selects a rule
// (rules.h) that applies jx primitives to the operands. Under make_jaxpr this yields a jx Jaxpr
// (load.cc); under jit/grad/vmap it is traced like any function. Every equation's results are
// checked against the types the text declares, so a loaded program is typechecked as it traces.
#include <functional>
#include <string>
#include <vector>

#include "core/jx.h"
#include "core/text/syntax.h"

namespace jx::text {

// jx's dtype for a printed one (f32, f64, i32, bool; i64 narrows to int32, as JAX without x64);
// throws ParseError naming `where` for the others.
DType dtype_of(const std::string& printed, const std::string& where);
AVal aval_of(const Type& t, const std::string& where);

class Interp;

// One equation being applied: its operands, declared results, parameters and where it is.
struct Call {
  const Eqn& e;
  std::vector<Array> in;
  std::vector<AVal> out;
  Interp& interp;

  [[noreturn]] void fail(const std::string& msg) const;
  const Value* opt(std::string_view name) const { return e.param(name); }
  const Value& param(std::string_view name) const;
  std::int64_t int_param(std::string_view name) const;
  int count_param(std::string_view name) const;                 // a count of operands: 0 to in.size()
  std::vector<std::int64_t> ints(std::string_view name) const;  // a tuple of integers; None: {}
  std::vector<std::int64_t> ints_of(const Value& v) const;
  bool flag(std::string_view name, bool dflt) const;
  DType dtype_param(std::string_view name) const;
  const Jaxpr& jaxpr_param(std::string_view name) const;
  // Evaluates a sub-jaxpr (closed: its constvars, if any, must be given first in args).
  std::vector<Array> sub(const Jaxpr& j, const std::vector<Array>& args) const;
};

using Rule = std::function<std::vector<Array>(Call&)>;
// The rule for a primitive name, or nullptr (rules.cc).
const Rule* find_rule(const std::string& prim);
// Every primitive name with a rule, sorted.
std::vector<std::string> rule_names();

class Interp {
 public:
  explicit Interp(std::string file) : file_(std::move(file)) {}
  // args: the jaxpr's constvars' values, then its invars'.
  std::vector<Array> eval(const Jaxpr& j, const std::vector<Array>& args);
  std::string where(const Pos& p) const { return file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.col); }

 private:
  std::string file_;
};

}  // namespace jx::text
