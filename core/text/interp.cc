#include "core/text/interp.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <unordered_map>

namespace jx::text {

DType dtype_of(const std::string& printed, const std::string& where) {
  if (printed == "f32" || printed == "float32") return DType::float32;
  if (printed == "f64" || printed == "float64") return DType::float64;
  if (printed == "i32" || printed == "int32" || printed == "i64" || printed == "int64" || printed == "u32" ||
      printed == "uint32")
    return DType::int32;
  if (printed == "bool") return DType::bool_;
  throw ParseError(fmt::format(
      "{}: dtype {} is not supported (jx has bool, i32, f32 and f64; i64 and u32 are read as i32)", where, printed));
}

AVal aval_of(const Type& t, const std::string& where) {
  AVal a{dtype_of(t.dtype, where), Shape(t.shape.begin(), t.shape.end())};
  std::int64_t n = 1;
  for (auto d : t.shape) {
    if (d > 0 && n > (std::int64_t{1} << 40) / d)
      throw ParseError(fmt::format("{}: shape {} has more than 2^40 elements", where, shape_str(a.shape)));
    n *= d;
  }
  return a;
}

namespace {

// A literal's value: numbers as Python prints them, True/False, inf, nan, with a sign.
double literal_value(const Atom& a, const std::string& where) {
  std::string s = a.text;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) s.erase(0, 1);
  double v;
  if (s == "True")
    v = 1;
  else if (s == "False")
    v = 0;
  else if (s == "inf")
    v = INFINITY;
  else if (s == "nan")
    v = NAN;
  else {
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end) throw ParseError(fmt::format("{}: malformed literal '{}'", where, a.text));
  }
  return neg ? -v : v;
}

// An untyped literal (JAX before 0.4.36) is weakly typed: it takes the dtype of the equation's
// first variable operand, else bool/int32/float32 by its spelling.
DType literal_dtype(const Atom& a, const std::vector<Array>& vars, const std::string& where) {
  if (!a.type.dtype.empty()) return dtype_of(a.type.dtype, where);
  for (const Array& v : vars) return v.dtype();
  if (a.text == "True" || a.text == "False") return DType::bool_;
  return a.text.find_first_of(".eEin") == std::string::npos ? DType::int32 : DType::float32;
}

Array literal(const Atom& a, DType d, const std::string& where) {
  const double v = literal_value(a, where);
  if (d == DType::int32 && (v != std::floor(v) || std::fabs(v) > 2147483647.0))
    throw ParseError(fmt::format("{}: literal {} does not fit int32", where, a.text));
  if (d == DType::bool_ && v != 0 && v != 1)
    throw ParseError(fmt::format("{}: literal {} is not a bool (True or False)", where, a.text));
  if (d == DType::float32 && std::isfinite(v) && std::fabs(v) > 3.4028234663852886e38)
    throw ParseError(fmt::format("{}: literal {} does not fit float32", where, a.text));
  return literal_array(jx::Atom::lit(v, d));
}

}  // namespace

std::vector<Array> Interp::eval(const Jaxpr& j, const std::vector<Array>& args) {
  const std::size_t n = j.constvars.size() + j.invars.size();
  if (args.size() != n)
    throw ShapeError(fmt::format("{}: the jaxpr takes {} inputs ({} constants, {} arguments), {} given", where(j.pos),
                                 n, j.constvars.size(), j.invars.size(), args.size()));
  std::unordered_map<std::string, Array> env;
  std::size_t k = 0;
  for (const auto* list : {&j.constvars, &j.invars})
    for (const Binder& b : *list) {
      const AVal want = aval_of(b.type, where(b.pos));
      if (!(args[k].aval() == want))
        throw ShapeError(fmt::format("{}: input '{}' is {}, the text declares {}", where(b.pos), b.name,
                                     args[k].aval().str(), want.str()));
      env[b.name] = args[k++];
    }
  auto read = [&](const std::vector<Atom>& atoms) {
    std::vector<Array> vars, out;
    for (const Atom& a : atoms)
      if (!a.literal) vars.push_back(env.at(a.text));
    for (const Atom& a : atoms)
      out.push_back(a.literal ? literal(a, literal_dtype(a, vars, where(a.pos)), where(a.pos)) : env.at(a.text));
    return out;
  };
  for (const Eqn& e : j.eqns) {
    Call c{e, read(e.args), {}, *this};
    for (const Binder& b : e.outs) c.out.push_back(aval_of(b.type, where(b.pos)));
    const Rule* rule = find_rule(e.prim);
    if (!rule) c.fail(fmt::format("primitive '{}' is not supported by jx's loader", e.prim));
    std::vector<Array> r;
    try {
      r = (*rule)(c);
    } catch (const ShapeError& err) {  // a rule that does not fit the operands: the text's fault
      c.fail(err.what());
    } catch (const std::out_of_range& err) {  // a rule's .at() on a dimension the parameters name
      c.fail(fmt::format("a parameter names a dimension or operand that does not exist ({})", err.what()));
    } catch (const std::invalid_argument& err) {  // std::stod / stoll of a parameter that is no number
      c.fail(fmt::format("a parameter that must be a number is not one ({})", err.what()));
    }
    if (r.size() != e.outs.size())
      c.fail(fmt::format("gives {} results, the text declares {}", r.size(), e.outs.size()));
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (!(r[i].aval() == c.out[i]))
        c.fail(fmt::format("result {} is {}, the text declares {}", i, r[i].aval().str(), c.out[i].str()));
      env[e.outs[i].name] = r[i];  // "_": JAX may still list it among the outputs (the last one bound)
    }
  }
  return read(j.outs);
}

void Call::fail(const std::string& msg) const {
  throw ParseError(fmt::format("{}: {}: {}", interp.where(e.pos), e.prim, msg));
}

const Value& Call::param(std::string_view name) const {
  const Value* v = e.param(name);
  if (!v) fail(fmt::format("missing parameter '{}'", name));
  return *v;
}

std::vector<std::int64_t> Call::ints_of(const Value& v) const {
  if (v.is_none()) return {};
  std::vector<std::int64_t> out;
  auto one = [&](const Value& x) {
    const Value* num = &x;
    if (x.kind == Value::Kind::call && x.items.size() == 1) num = &x.items[0];  // np.int64(0)
    if (num->kind != Value::Kind::number || num->text.find_first_of(".e") != std::string::npos)
      fail(fmt::format("expected an integer parameter value, got '{}'", num->text));
    out.push_back(std::stoll(num->text));
  };
  if (v.kind == Value::Kind::tuple || v.kind == Value::Kind::list)
    for (const Value& x : v.items) one(x);
  else
    one(v);
  return out;
}

std::vector<std::int64_t> Call::ints(std::string_view name) const { return ints_of(param(name)); }

std::int64_t Call::int_param(std::string_view name) const {
  auto v = ints_of(param(name));
  if (v.size() != 1) fail(fmt::format("parameter '{}' must be one integer", name));
  return v[0];
}

int Call::count_param(std::string_view name) const {
  const std::int64_t v = int_param(name);
  if (v < 0 || v > static_cast<std::int64_t>(in.size()))
    fail(fmt::format("parameter '{}' = {} must count operands (0 to {})", name, v, in.size()));
  return static_cast<int>(v);
}

bool Call::flag(std::string_view name, bool dflt) const {
  const Value* v = e.param(name);
  if (!v) return dflt;
  if (v->kind == Value::Kind::name && (v->text == "True" || v->text == "False")) return v->text == "True";
  if (v->kind == Value::Kind::number) return v->text != "0";
  fail(fmt::format("parameter '{}' must be True or False", name));
}

DType Call::dtype_param(std::string_view name) const {
  const Value& v = param(name);
  std::string s = v.text;
  if (v.kind == Value::Kind::call && v.text == "dtype" && v.items.size() == 1) s = v.items[0].text;  // dtype('float32')
  if (auto dot = s.rfind('.'); dot != std::string::npos) s = s.substr(dot + 1);                      // np.float32
  return dtype_of(s, interp.where(v.pos));
}

const Jaxpr& Call::jaxpr_param(std::string_view name) const {
  const Value& v = param(name);
  if (v.kind != Value::Kind::jaxpr) fail(fmt::format("parameter '{}' must be a jaxpr", name));
  return *v.jaxpr;
}

std::vector<Array> Call::sub(const Jaxpr& j, const std::vector<Array>& args) const { return interp.eval(j, args); }

}  // namespace jx::text
