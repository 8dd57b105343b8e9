#include "core/text/load.h"

#include <fmt/format.h>

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
    p.jaxpr.constvars.assign(p.jaxpr.invars.begin(), p.jaxpr.invars.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
    p.jaxpr.invars.erase(p.jaxpr.invars.begin(), p.jaxpr.invars.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
  }
  typecheck(p.jaxpr);
  for (const jx::Atom& a : p.jaxpr.outs) p.out_avals.push_back(p.jaxpr.aval_of(a));
  return p;
}

std::vector<Array> run_program(const Program& p, const std::vector<Array>& args) {
  if (args.size() != p.in_avals.size())
    throw ShapeError(fmt::format("{}: the program takes {} inputs, {} given", p.source, p.in_avals.size(), args.size()));
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!(args[i].aval() == p.in_avals[i]))
      throw ShapeError(fmt::format("{}: input {} is {}, the program takes {}", p.source, i, args[i].aval().str(), p.in_avals[i].str()));
  if (!p.jaxpr.constvars.empty() && p.consts.empty()) {
    std::vector<Array> c(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(p.text_consts));
    std::vector<Array> a(args.begin() + static_cast<std::ptrdiff_t>(p.text_consts), args.end());
    return eval_jaxpr(p.jaxpr, c, a);
  }
  return eval_jaxpr(p.jaxpr, p.consts, args);
}

}  // namespace jx::text
