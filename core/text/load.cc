#include "core/text/load.h"

#include <fmt/format.h>

#include "core/jx.h"
#include "core/text/interp.h"
#include "core/trace/builder.h"

namespace jx::text {

Program load_program(std::string_view src, std::string_view file) {
  Program p;
  p.source = std::string(file);
  p.syntax = parse(src, file);
  const Interp probe(p.source);
  for (const auto* list : {&p.syntax->constvars, &p.syntax->invars})
    for (const Binder& b : *list) p.in_avals.push_back(aval_of(b.type, probe.where(b.pos)));
  p.text_consts = p.syntax->constvars.size();
  ClosedJaxpr cj = make_jaxpr_flat(
      [&](const std::vector<Array>& args) {
        Interp in(p.source);
        return in.eval(*p.syntax, args);
      },
      p.in_avals);
  p.jaxpr = std::move(cj.jaxpr);
  p.consts = std::move(cj.consts);
  if (p.consts.empty() && p.text_consts > 0) {  // the text's constvars stay constvars (round trip)
    p.jaxpr.constvars.assign(p.jaxpr.invars.begin(),
                             p.jaxpr.invars.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
    p.jaxpr.invars.erase(p.jaxpr.invars.begin(), p.jaxpr.invars.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
  }
  typecheck(p.jaxpr);
  for (const jx::Atom& a : p.jaxpr.outs) p.out_avals.push_back(p.jaxpr.aval_of(a));
  return p;
}

SummedLoss summed_loss(FlatFn fn, std::vector<Array> args, std::size_t consts) {
  std::vector<std::size_t> fl;
  for (std::size_t i = consts; i < args.size(); ++i)
    if (is_floating(args[i].dtype())) fl.push_back(i);
  SummedLoss l;
  if (fl.empty()) return l;
  l.dtype = args[fl[0]].dtype();
  for (auto i : fl) l.x.push_back(args[i]);
  l.loss = [fn = std::move(fn), args = std::move(args), fl, acc = l.dtype](const std::vector<Array>& x) {
    std::vector<Array> full = args;
    for (std::size_t k = 0; k < fl.size(); ++k) full[fl[k]] = x[k];
    Array s = np::zeros({}, acc);
    for (const Array& o : fn(full))
      if (is_floating(o.dtype())) s = lax::add(s, np::astype(np::sum(o), acc));
    return std::vector<Array>{s};
  };
  return l;
}

std::vector<Array> run_program(const Program& p, const std::vector<Array>& args) {
  if (args.size() != p.in_avals.size())
    throw ShapeError(
        fmt::format("{}: the program takes {} inputs, {} given", p.source, p.in_avals.size(), args.size()));
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!(args[i].aval() == p.in_avals[i]))
      throw ShapeError(fmt::format("{}: input {} is {}, the program takes {}", p.source, i, args[i].aval().str(),
                                   p.in_avals[i].str()));
  if (!p.jaxpr.constvars.empty() && p.consts.empty()) {
    std::vector<Array> c(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
    std::vector<Array> a(args.begin() + static_cast<std::ptrdiff_t>(p.text_consts), args.end());
    return eval_jaxpr(p.jaxpr, c, a);
  }
  return eval_jaxpr(p.jaxpr, p.consts, args);
}

}  // namespace jx::text
