#pragma once
// The syntax of jaxpr text, as JAX prints it (`str(jax.make_jaxpr(f)(*args))`, JAX 0.4.30 to
// 0.11) and as jx prints it (Jaxpr::str, the same grammar):
//
//   program  := ('let' NAME '=' jaxpr 'in')* jaxpr
//   jaxpr    := '{' 'lambda' binder* ';' binder* '.' 'let' eqn* 'in' '(' atoms ')' '}'
//   binder   := NAME ':' type            type := DTYPE '[' dims ']'      ('_' drops an output)
//   eqn      := binder+ '=' PRIM ['[' (NAME '=' value)* ']'] atom*
//   atom     := NAME | literal            literal := (NUMBER | True | False | inf | nan) [':' type]
//   value    := jaxpr | a Python repr (tuples, lists, None, enums, calls such as
//               GatherDimensionNumbers(offset_dims=(), ...) or np.int64(0), <opaque>)
//
// Nothing here knows a primitive: the loader (load.h) gives the names meaning.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/errors.h"

namespace jx::text {

// "file:line:column: expected ..., found ..." for malformed text; also any loading error that
// names a place in the text.
struct ParseError : Error {
  using Error::Error;
};

struct Pos {
  int line = 1, col = 1;
};

struct Type {
  std::string dtype;  // as printed: f32, i32, bool, f64, ...
  std::vector<std::int64_t> shape;
};

struct Jaxpr;

// A parameter value: a Python repr as a tree.
struct Value {
  enum class Kind { name, number, string, tuple, list, call, jaxpr, opaque };
  Kind kind = Kind::name;
  std::string text;          // name (dotted), number, string, call name, opaque
  std::vector<Value> items;  // tuple, list, call positional arguments
  // call keyword arguments, names and values side by side (a pair holding the incomplete Value
  // would not compile everywhere)
  std::vector<std::string> kwarg_names;
  std::vector<Value> kwarg_values;
  std::shared_ptr<const Jaxpr> jaxpr;
  Pos pos;

  bool is_none() const { return kind == Kind::name && text == "None"; }
  const Value* kwarg(std::string_view k) const;
};

struct Binder {
  std::string name;  // "_": an output nobody reads
  Type type;
  Pos pos;
};

struct Atom {
  bool literal = false;
  std::string text;  // variable name, or the literal as printed ("2.0", "True", "-inf")
  Type type;         // literals: dtype empty when the text gives none (JAX before 0.4.36: weak)
  Pos pos;
};

struct Eqn {
  std::vector<Binder> outs;
  std::string prim;
  std::vector<std::pair<std::string, Value>> params;
  std::vector<Atom> args;
  Pos pos;
  const Value* param(std::string_view k) const;
};

struct Jaxpr {
  std::vector<Binder> constvars, invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outs;
  Pos pos;
};

// Parses a whole program (optional `let name = {...} in` prefixes, then the jaxpr). `file` names
// the source in errors. Nesting deeper than kMaxDepth is an error, not a stack overflow.
inline constexpr int kMaxDepth = 64;
std::shared_ptr<const Jaxpr> parse(std::string_view text, std::string_view file = "<text>");

}  // namespace jx::text
