#include "core/ir/jaxpr.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/prim/abstract_eval.h"

namespace jx {
namespace {

std::string var_name(int i) {  // a..z, ba..zz, ... as JAX prints them
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i-- > 0);
  return s;
}

std::string aval_short(const AVal& a) { return fmt::format("{}{}", dtype_short_name(a.dtype), shape_str(a.shape)); }

// A float as Python's repr prints it: shortest round trip, always with a '.' or an exponent.
std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

// JAX's typed literal: "2.0:f32[]", "1:i32[]", "True:bool[]".
std::string literal_str(const Atom& a) {
  const double v = a.value;
  std::string s;
  switch (a.dtype) {
    case DType::bool_: s = v != 0 ? "True" : "False"; break;
    case DType::int32: s = fmt::format("{}", static_cast<long long>(v)); break;
    case DType::float32: s = float_repr(static_cast<float>(v)); break;
    case DType::float64: s = float_repr(v); break;
  }
  return fmt::format("{}:{}[]", s, dtype_short_name(a.dtype));
}

Array literal_array(const Atom& a) {
  if (a.dtype == DType::int32 && !fits_int32(a.value))
    throw Error(fmt::format("literal {} does not fit int32", a.value));
  AVal av{a.dtype, {}};
  std::vector<std::byte> raw(av.bytes());
  visit_dtype(a.dtype, [&]<class T>() {
    const T v = a.dtype == DType::bool_ ? static_cast<T>(a.value != 0) : static_cast<T>(a.value);
    std::memcpy(raw.data(), &v, sizeof(T));
  });
  return array_from_bytes(raw, av);
}

std::string Jaxpr::str() const {
  std::vector<int> names(avals.size(), -1);
  int next = 0;
  auto decl = [&](int v) {
    names[v] = next++;
    return fmt::format("{}:{}", var_name(names[v]), aval_short(avals[v]));
  };
  auto use = [&](const Atom& a) { return a.is_literal() ? literal_str(a) : var_name(names[a.var]); };
  std::vector<std::string> ins, cs, lines, os;
  for (int v : constvars) cs.push_back(decl(v));
  for (int v : invars) ins.push_back(decl(v));
  for (const Eqn& e : eqns) {
    std::vector<std::string> outs, args;
    for (int v : e.out) outs.push_back(decl(v));
    for (const Atom& a : e.in) args.push_back(use(a));
    const std::string p = e.params.str(e.prim);
    lines.push_back(fmt::format("{} = {}{} {}", fmt::join(outs, " "), prim_name(e.prim), p.empty() ? "" : "[" + p + "]",
                                fmt::join(args, " ")));
  }
  for (const Atom& a : outs) os.push_back(use(a));
  const std::string out = os.size() == 1 ? os[0] + "," : fmt::format("{}", fmt::join(os, ", "));
  const std::string head = fmt::format("{{ lambda {}; {}. let", fmt::join(cs, " "), fmt::join(ins, " "));
  if (lines.size() <= 1 && (lines.empty() || lines[0].find('\n') == std::string::npos))
    return fmt::format("{}{}{} in ({}) }}", head, lines.empty() ? "" : " ", lines.empty() ? "" : lines[0], out);
  return fmt::format("{}\n    {}\n  in ({}) }}", head, fmt::join(lines, "\n    "), out);
}

void typecheck(const Jaxpr& j) {
  std::vector<bool> defined(j.avals.size(), false);
  auto define = [&](int v, const char* what) {
    if (v < 0 || v >= static_cast<int>(j.avals.size()))
      throw Error(fmt::format("typecheck: {} variable {} out of range", what, v));
    if (defined[v]) throw Error(fmt::format("typecheck: variable {} defined twice", v));
    defined[v] = true;
  };
  auto check_use = [&](const Atom& a, const std::string& where) {
    if (a.is_literal()) return;
    if (a.var < 0 || a.var >= static_cast<int>(j.avals.size()) || !defined[a.var])
      throw Error(fmt::format("typecheck: variable {} used before definition in {}", a.var, where));
  };
  for (int v : j.invars) define(v, "input");
  for (int v : j.constvars) define(v, "constant");
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    const std::string where = fmt::format("equation {} ({})", i, prim_name(e.prim));
    std::vector<AVal> in;
    for (const Atom& a : e.in) {
      check_use(a, where);
      in.push_back(j.aval_of(a));
    }
    std::vector<AVal> out;
    try {
      out = abstract_eval(e.prim, in, e.params);
    } catch (const ShapeError& err) {
      throw Error(fmt::format("typecheck: {}: {}", where, err.what()));
    }
    if (out.size() != e.out.size())
      throw Error(fmt::format("typecheck: {} has {} outputs, expected {}", where, e.out.size(), out.size()));
    for (std::size_t k = 0; k < out.size(); ++k) {
      define(e.out[k], "output");
      if (!(j.avals[e.out[k]] == out[k]))
        throw Error(fmt::format("typecheck: {} output {} is {}, abstract_eval gives {}", where, k,
                                j.avals[e.out[k]].str(), out[k].str()));
    }
  }
  for (const Atom& a : j.outs) check_use(a, "the outputs");
}

}  // namespace jx
