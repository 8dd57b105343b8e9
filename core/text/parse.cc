// Recursive descent over the grammar in syntax.h. Variables are resolved per jaxpr (JAX's
// sub-jaxprs are closed): in argument position a name defined in the current jaxpr is a use,
// `inf`/`nan` that are not defined are literals, and anything else ends the argument list.
#include <fmt/format.h>
#include <map>
#include <optional>
#include <type_traits>
#include <set>

#include "core/text/lexer.h"
#include "core/text/syntax.h"

namespace jx::text {

const Value* Value::kwarg(std::string_view k) const {
  for (std::size_t i = 0; i < kwarg_names.size(); ++i)
    if (kwarg_names[i] == k) return &kwarg_values[i];
  return nullptr;
}

const Value* Eqn::param(std::string_view k) const {
  for (const auto& [name, v] : params)
    if (name == k) return &v;
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string_view file) : t_(std::move(toks)), file_(file) {}

  std::shared_ptr<const Jaxpr> program() {
    auto j = with_lets([&] { return jaxpr(); });
    if (cur().kind != Token::Kind::end) fail("the end of the program");
    return j;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& at(std::size_t k) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool peek(std::string_view p, std::size_t k = 0) const { return at(k).kind == Token::Kind::punct && at(k).text == p; }
  bool peek_name(std::string_view n, std::size_t k = 0) const {
    return at(k).kind == Token::Kind::name && at(k).text == n;
  }
  [[noreturn]] void fail(std::string_view what) const {
    fail_at(cur(), fmt::format("expected {}, found {}", what, describe(cur())));
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const {
    throw ParseError(fmt::format("{}:{}:{}: {}", file_, t.pos.line, t.pos.col, msg));
  }
  void expect(std::string_view p) {
    if (!peek(p)) fail(fmt::format("'{}'", p));
    next();
  }
  void expect_name(std::string_view n) {
    if (!peek_name(n)) fail(fmt::format("'{}'", n));
    next();
  }
  Token expect_kind(Token::Kind k, std::string_view what) {
    if (cur().kind != k) fail(what);
    return next();
  }
  struct Depth {
    Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.fail_at(p_.cur(), fmt::format("nesting deeper than {} levels", kMaxDepth));
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  // `let name = { lambda ... } in` bindings, then `tail`. JAX prints them in any order (a
  // binding may name a later one), and a parameter value may carry its own: names resolve
  // innermost first once the chain is complete.
  template <class F>
  std::invoke_result_t<F> with_lets(F tail) {
    scopes_.emplace_back();
    while (peek_name("let") && at(1).kind == Token::Kind::name && peek("=", 2)) {
      next();
      const std::string name = next().text;
      next();
      scopes_.back()[name] = jaxpr();
      expect_name("in");
    }
    auto r = tail();
    std::set<const Jaxpr*> seen;
    for (auto& [n, j] : scopes_.back()) resolve(*j, seen);
    resolve_result(r, seen);
    scopes_.pop_back();
    return r;
  }
  void resolve_result(const std::shared_ptr<const Jaxpr>& j, std::set<const Jaxpr*>& seen) { resolve(*j, seen); }
  void resolve_result(Value& v, std::set<const Jaxpr*>& seen) { resolve(v, seen); }
  // Names bound by the innermost chain, wherever they occur as parameter values.
  void resolve(const Jaxpr& j, std::set<const Jaxpr*>& seen) {
    if (!seen.insert(&j).second) return;
    for (Eqn& e : const_cast<Jaxpr&>(j).eqns)  // built here, non-const until returned
      for (auto& [k, v] : e.params) resolve(v, seen);
  }
  void resolve(Value& v, std::set<const Jaxpr*>& seen) {
    if (v.kind == Value::Kind::name)
      if (auto it = scopes_.back().find(v.text); it != scopes_.back().end()) {
        v.kind = Value::Kind::jaxpr;
        v.jaxpr = it->second;
      }
    if (v.kind == Value::Kind::jaxpr && v.jaxpr) resolve(*v.jaxpr, seen);
    for (Value& x : v.items) resolve(x, seen);
    for (Value& x : v.kwarg_values) resolve(x, seen);
  }

  std::shared_ptr<const Jaxpr> jaxpr() {
    Depth d(*this);
    auto j = std::make_shared<Jaxpr>();
    j->pos = cur().pos;
    expect("{");
    expect_name("lambda");
    std::set<std::string> scope;
    j->constvars = binders(scope);
    expect(";");
    j->invars = binders(scope);
    expect(".");
    expect_name("let");
    while (!(peek_name("in") && peek("(", 1))) {
      j->eqns.push_back(eqn(scope));
      if (peek(";")) next();  // equations on one line: "let b = ...; c = ... in"
    }
    next();
    j->outs = outs(scope);
    expect("}");
    return j;
  }

  std::vector<Binder> binders(std::set<std::string>& scope) {
    std::vector<Binder> v;
    while (cur().kind == Token::Kind::name && peek(":", 1)) v.push_back(binder(scope));
    return v;
  }

  Binder binder(std::set<std::string>& scope) {
    Binder b;
    const Token& n = next();
    b.name = n.text;
    b.pos = n.pos;
    expect(":");
    b.type = type();
    if (b.name != "_" && !scope.insert(b.name).second)
      fail_at(n, fmt::format("variable '{}' is defined twice", b.name));
    if (b.name == "_") scope.insert("_");
    return b;
  }

  Type type() {
    Type ty;
    ty.dtype = expect_kind(Token::Kind::name, "a dtype (f32, i32, bool, ...)").text;
    if (cur().kind == Token::Kind::opaque)  // key<fry>: a PRNG key type
      fail_at(cur(),
              fmt::format("dtype {}{} is not supported (PRNG keys; pass raw uint32 key data)", ty.dtype, cur().text));
    expect("[");
    while (!peek("]")) {
      const Token& d = expect_kind(Token::Kind::number, "a dimension size");
      if (d.text.find_first_not_of("0123456789") != std::string::npos || d.text.size() > 18)
        fail_at(d, fmt::format("dimension size {} is not an integer below 10^18", d.text));
      ty.shape.push_back(std::stoll(d.text));
      if (!peek("]")) expect(",");
    }
    next();
    return ty;
  }

  // An eqn starts with binders followed by '='.
  Eqn eqn(std::set<std::string>& scope) {
    Eqn e;
    e.pos = cur().pos;
    if (!(cur().kind == Token::Kind::name && peek(":", 1))) fail("an equation ('name:type = primitive ...') or 'in'");
    std::vector<Binder> outs;
    while (cur().kind == Token::Kind::name && peek(":", 1)) {
      Binder b;
      b.pos = cur().pos;
      b.name = next().text;
      next();
      b.type = type();
      outs.push_back(std::move(b));
    }
    expect("=");
    const Token& p = expect_kind(Token::Kind::name, "a primitive name");
    e.prim = p.text;
    if (peek("[")) e.params = params();
    while (auto a = arg(scope)) e.args.push_back(std::move(*a));
    for (auto& b : outs)  // outputs enter scope after the arguments are read ("_" may repeat)
      if (!scope.insert(b.name).second && b.name != "_")
        fail_at(at(0), fmt::format("variable '{}' is defined twice", b.name));
    e.outs = std::move(outs);
    return e;
  }

  std::optional<Atom> arg(const std::set<std::string>& scope) {
    const Token& c = cur();
    Atom a;
    a.pos = c.pos;
    // a defined name is a use, unless it begins the next equation ("_:") or is the final
    // "in (" (a variable may well be called `in`: names run a..z, ba..zz, ...)
    const bool ends = (c.text == "_" && peek(":", 1)) || (c.text == "in" && peek("(", 1));
    if (c.kind == Token::Kind::name && scope.count(c.text) && !ends) {
      a.text = next().text;
      return a;
    }
    // `inf`/`nan` may also be variable names (after ~6000 variables): one that starts a line
    // and is followed by ':' is the binder of the next equation, not a literal
    const bool starts_line = i_ > 0 && t_[i_ - 1].pos.line < c.pos.line;
    const bool word_literal = c.kind == Token::Kind::name &&
                              (c.text == "True" || c.text == "False" || c.text == "inf" || c.text == "nan") &&
                              !(starts_line && peek(":", 1));
    if (!(c.kind == Token::Kind::number || word_literal || peek("-"))) {
      if (c.kind == Token::Kind::name && !peek(":", 1) && c.text != "in")
        fail_at(c, fmt::format("undefined variable '{}'", c.text));
      return std::nullopt;
    }
    a.literal = true;
    a.text = literal_text();
    if (peek(":")) {
      next();
      a.type = type();
    }
    return a;
  }

  std::string literal_text() {
    std::string s;
    if (peek("-")) s = next().text;
    const Token& v = cur();
    if (v.kind == Token::Kind::number ||
        (v.kind == Token::Kind::name && (v.text == "inf" || v.text == "nan" || v.text == "True" || v.text == "False")))
      return s + next().text;
    fail("a number after '-'");
  }

  std::vector<Atom> outs(const std::set<std::string>& scope) {
    std::vector<Atom> v;
    expect("(");
    while (!peek(")")) {
      auto a = arg(scope);
      if (!a) fail("an output variable or literal");
      v.push_back(std::move(*a));
      if (!peek(")")) expect(",");
    }
    next();
    return v;
  }

  std::vector<std::pair<std::string, Value>> params() {
    expect("[");
    std::vector<std::pair<std::string, Value>> ps;
    while (!peek("]")) {
      const Token& k = expect_kind(Token::Kind::name, "a parameter name or ']'");
      expect("=");
      ps.emplace_back(k.text, value());
    }
    next();
    return ps;
  }

  Value value() {
    Depth d(*this);
    Value v;
    v.pos = cur().pos;
    const Token& c = cur();
    if (peek("{") && peek_name("lambda", 1)) {
      v.kind = Value::Kind::jaxpr;
      v.jaxpr = jaxpr();
    } else if (peek_name("let") && at(1).kind == Token::Kind::name && peek("=", 2)) {
      return with_lets([&] { return value(); });
    } else if (peek("(") || peek("[")) {
      v.kind = peek("(") ? Value::Kind::tuple : Value::Kind::list;
      v.items = sequence(next().text == "(" ? ")" : "]", nullptr);
    } else if (peek("{")) {
      v.kind = Value::Kind::opaque;  // a dict repr: kept as text
      v.text = balanced();
    } else if (c.kind == Token::Kind::number || peek("-")) {
      v.kind = Value::Kind::number;
      v.text = literal_text();
    } else if (c.kind == Token::Kind::string || c.kind == Token::Kind::opaque) {
      v.kind = c.kind == Token::Kind::string ? Value::Kind::string : Value::Kind::opaque;
      v.text = next().text;
    } else if (c.kind == Token::Kind::name) {
      named_value(v);
    } else if (peek("*")) {  // a PyTreeDef leaf: PyTreeDef((*, [*]))
      v.text = next().text;
    } else {
      fail("a parameter value");
    }
    return v;
  }

  // A dotted name (GatherScatterMode.CLIP, float32), a call of one (np.int64(0)), or a jaxpr
  // bound by `let`.
  void named_value(Value& v) {
    v.text = next().text;
    while (peek(".") && at(1).kind == Token::Kind::name) {
      next();
      v.text += "." + next().text;
    }
    if (peek("(")) {
      next();
      v.kind = Value::Kind::call;
      v.items = sequence(")", &v);
    } else {
      for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
        if (auto it = s->find(v.text); it != s->end()) {
          v.kind = Value::Kind::jaxpr;
          v.jaxpr = it->second;
          break;
        }
    }
  }

  // Items up to `close`, comma-separated (a trailing comma allowed; JAX separates the jaxprs of
  // cond's multi-line `branches=(...)` by newlines only); `k=v` items go to kwargs.
  std::vector<Value> sequence(std::string_view close, Value* kwargs) {
    std::vector<Value> items;
    while (!peek(close)) {
      if (kwargs && cur().kind == Token::Kind::name && peek("=", 1)) {
        std::string k = next().text;
        next();
        kwargs->kwarg_names.push_back(std::move(k));
        kwargs->kwarg_values.push_back(value());
      } else {
        items.push_back(value());
      }
      if (peek(","))
        next();
      else if (!peek(close) && !(peek("{") && peek_name("lambda", 1)) && cur().kind != Token::Kind::name)
        fail(fmt::format("',' or '{}'", close));
    }
    next();
    return items;
  }

  std::string balanced() {
    std::string s;
    int depth = 0;
    do {
      if (cur().kind == Token::Kind::end) fail("a closing '}'");
      if (peek("{")) ++depth;
      if (peek("}")) --depth;
      s += next().text;
    } while (depth > 0);
    return s;
  }

  std::vector<Token> t_;
  std::string_view file_;
  std::size_t i_ = 0;
  int depth_ = 0;
  std::vector<std::map<std::string, std::shared_ptr<const Jaxpr>>> scopes_;
};

}  // namespace

std::shared_ptr<const Jaxpr> parse(std::string_view text, std::string_view file) {
  return Parser(tokenize(text, file), file).program();
}

}  // namespace jx::text
