// Calls (jit/pjit, closed_call, remat, custom_jvp_call, custom_vjp_call: inlined, so their
// derivative is the primal jaxpr's), scan and associative_scan (jx's primitives, bodies traced
// from the text), cond (every branch evaluated, the result chosen by select_n), while, and the
// cumulative reductions (associative scans).
#include <fmt/format.h>

#include "core/text/rules.h"
#include "core/transform/control_internal.h"

namespace jx::text {
namespace {

// The first jaxpr-valued parameter among the names a call primitive uses for its body.
std::vector<Array> inline_call(Call& c) {
  for (const char* k : {"jaxpr", "call_jaxpr", "fun_jaxpr"})
    if (const Value* v = c.opt(k); v && v->kind == Value::Kind::jaxpr) {
      const Jaxpr& j = *v->jaxpr;
      if (!j.constvars.empty())
        c.fail(
            fmt::format("the called jaxpr has {} constants whose values the text does not hold", j.constvars.size()));
      return c.sub(j, c.in);
    }
  c.fail("no jaxpr parameter (jaxpr, call_jaxpr or fun_jaxpr)");
}

// A sub-jaxpr as a control primitive's body: traced to a jx jaxpr; constants that tracing made
// (none for text, which holds only scalar literals) become leading operands.
std::pair<std::shared_ptr<const JaxprBody>, std::vector<Array>> body_of(Call& c, const Jaxpr& sub) {
  if (!sub.constvars.empty()) c.fail("a body with constants whose values the text does not hold");
  std::vector<AVal> in;
  for (const Binder& b : sub.invars) in.push_back(aval_of(b.type, c.interp.where(b.pos)));
  auto [j, hoisted] = hoist(make_jaxpr_flat([&](const std::vector<Array>& a) { return c.sub(sub, a); }, in));
  return {std::make_shared<const JaxprBody>(std::move(j)), std::move(hoisted)};
}

// Splits a scan's operands into consts | carry | xs when the text gives no counts: the first
// split whose carry avals the body returns and whose xs are stacked `length` times.
std::pair<int, int> scan_split(Call& c, const Jaxpr& sub, std::int64_t length) {
  if (c.opt("num_consts") && c.opt("num_carry")) {
    const int nc = c.count_param("num_consts"), nk = c.count_param("num_carry");
    if (nc + nk > int(c.in.size()))
      c.fail(fmt::format("num_consts {} + num_carry {} exceed the {} operands", nc, nk, c.in.size()));
    return {nc, nk};
  }
  if (const Value* ft = c.opt("ft_in"); ft && ft->kind == Value::Kind::tuple && ft->items.size() == 3)
    if (ft->items[0].items.size() + ft->items[1].items.size() <= c.in.size())
      return {int(ft->items[0].items.size()), int(ft->items[1].items.size())};
  const int n = int(c.in.size()), nout = int(c.out.size());
  if (sub.invars.size() != std::size_t(n))
    c.fail(fmt::format("{} operands for a body of {} inputs", n, sub.invars.size()));
  auto body_in = [&](int i) { return aval_of(sub.invars[i].type, c.interp.where(sub.invars[i].pos)); };
  for (int nc = 0; nc <= n; ++nc)
    for (int nk = 0; nc + nk <= n && nk <= nout; ++nk) {
      bool ok = true;
      for (int i = 0; i < nc + nk && ok; ++i) ok = c.in.at(i).aval() == body_in(i);
      for (int k = 0; k < nk && ok; ++k) ok = c.in.at(nc + k).aval() == c.out[k];
      for (int i = nc + nk; i < n && ok; ++i) {
        AVal x = c.in.at(i).aval();
        ok = x.ndim() > 0 && x.shape[0] == length;
        if (ok) x.shape.erase(x.shape.begin());
        ok = ok && x == body_in(i);
      }
      if (ok) return {nc, nk};
    }
  c.fail("cannot tell the scan's constants, carries and xs apart; give num_consts and num_carry");
}

std::vector<Array> scan(Call& c) {
  const Jaxpr& sub = c.jaxpr_param("jaxpr");
  const std::int64_t length = c.int_param("length");
  auto [nc, nk] = scan_split(c, sub, length);
  auto [body, hoisted] = body_of(c, sub);
  PrimParams p;
  p.num_consts = nc + int(hoisted.size());
  p.num_carry = nk;
  p.length = length;
  p.reverse = c.flag("reverse", false);
  p.require_paths = ScanPaths::from_bits(c.opt("require") ? unsigned(c.int_param("require")) : 0);
  p.body = body;
  std::vector<Array> ops = hoisted;
  ops.insert(ops.end(), c.in.begin(), c.in.end());
  return bind(Prim::scan, ops, p);
}

std::vector<Array> associative_scan(Call& c) {
  auto [body, hoisted] = body_of(c, c.jaxpr_param("jaxpr"));
  if (!hoisted.empty()) c.fail("a combine that makes array constants is not supported");
  PrimParams p;
  p.axis = c.int_param("axis");
  p.reverse = c.flag("reverse", false);
  p.num_consts = c.count_param("num_consts");
  p.body = body;
  if (c.opt("tangent_of")) {
    auto [t, th] = body_of(c, c.jaxpr_param("tangent_of"));
    p.tangent_of = t;
    p.tangent_consts = c.ints("tangent_consts");
    p.tangent_leaves = c.ints("tangent_leaves");
  }
  return bind(Prim::associative_scan, c.in, p);
}

// while[body_jaxpr body_nconsts cond_jaxpr cond_nconsts] cond consts | body consts | init
std::vector<Array> while_loop(Call& c) {
  auto [cond, ch] = body_of(c, c.jaxpr_param("cond_jaxpr"));
  auto [body, bh] = body_of(c, c.jaxpr_param("body_jaxpr"));
  const std::size_t cc = static_cast<std::size_t>(c.count_param("cond_nconsts")),
                    bc = static_cast<std::size_t>(c.count_param("body_nconsts"));
  if (cc + bc > c.in.size()) c.fail("more constants than operands");
  PrimParams p;
  p.cond = cond;
  p.body = body;
  p.cond_consts = static_cast<int>(ch.size() + cc);
  p.num_consts = static_cast<int>(bh.size() + bc);
  std::vector<Array> ops = ch;
  ops.insert(ops.end(), c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(cc));
  ops.insert(ops.end(), bh.begin(), bh.end());
  ops.insert(ops.end(), c.in.begin() + static_cast<std::ptrdiff_t>(cc), c.in.end());
  return bind(Prim::while_loop, ops, p);
}

// cond[branches=(...)] index ops...: jx's cond primitive (only the chosen branch runs). A bool
// index (JAX before 0.4) picks branch 1 when true.
std::vector<Array> cond(Call& c) {
  const Value& br = c.param("branches");
  if (br.kind != Value::Kind::tuple || br.items.empty()) c.fail("branches must be a tuple of jaxprs");
  PrimParams p;
  std::vector<Array> consts;
  std::vector<std::shared_ptr<const JaxprBody>> bodies;
  for (const Value& b : br.items) {
    if (b.kind != Value::Kind::jaxpr) c.fail("branches must be a tuple of jaxprs");
    auto [body, hoisted] = body_of(c, *b.jaxpr);
    if (!hoisted.empty()) c.fail("a branch that makes array constants is not supported");
    p.branches.push_back(body);
  }
  std::vector<Array> ops = c.in;
  if (ops.at(0).dtype() != DType::int32) ops[0] = cast(ops[0], DType::int32);
  return bind(Prim::cond, ops, p);
}

// cumsum[axis reverse] and friends as associative scans of their binary operation.
Rule cumulative(std::function<Array(const Array&, const Array&)> op) {
  return [op](Call& c) -> std::vector<Array> {
    lax::AssocFn fn = [&](const std::vector<Array>& a, const std::vector<Array>& b) -> std::vector<Array> {
      return {op(a[0], b[0])};
    };
    return lax::associative_scan_flat(fn, {c.in.at(0)}, c.flag("reverse", false), c.int_param("axis"));
  };
}

// log(exp(a) + exp(b)), exact at infinities (a - b is nan only when both are the same infinity).
Array logaddexp(const Array& a, const Array& b) {
  const Array m = lax::max(a, b), d = lax::sub(a, b);
  const Array soft = lax::add(m, lax::log1p(lax::exp(lax::neg(lax::abs(d)))));
  return lax::select(lax::ne(d, d), lax::add(a, b), soft);
}

}  // namespace

void add_control_rules(RuleTable& t) {
  for (const char* n : {"pjit", "jit", "closed_call", "core_call", "xla_call", "remat", "checkpoint", "custom_jvp_call",
                        "custom_vjp_call", "custom_vjp_call_jaxpr", "remat2", "named_call"})
    t[n] = inline_call;
  t["scan"] = scan;
  t["associative_scan"] = associative_scan;
  t["cond"] = cond;
  t["while"] = t["while_loop"] = while_loop;
  t["cumsum"] = cumulative(lax::add);
  t["cumprod"] = cumulative(lax::mul);
  t["cummax"] = cumulative(lax::max);
  t["cummin"] = cumulative(lax::min);
  t["cumlogsumexp"] = cumulative(logaddexp);
}

}  // namespace jx::text
