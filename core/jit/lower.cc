// Lowering a jaxpr to a Program with fusion.
//
// Every jaxpr variable gets a symbolic value, an expression tree over its logical index:
// loads of program buffers through affine views, constants, iotas, elementwise ops, and at most
// one pending reduction (a reduction whose result is still open to an elementwise epilogue).
// Movement primitives rewrite the views of the loads below them (no copies); elementwise
// primitives build bigger trees while the distinct buffers stay within the budget (over budget:
// materialize the operand that binds the most buffers, repeat). A tree becomes a kernel when it
// is materialized: at a routine or an output, when used by several equations, or for the budget.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "core/ir/jaxpr.h"
#include "core/jit/passes.h"
#include "core/jit/program.h"

#include "core/jit/lower_expr.h"

namespace jx {
namespace {

using namespace lower_detail;

// Elements of a dot_general operand outside its batch and contracting dims.
std::int64_t free_size(const AVal& a, const std::vector<std::int64_t>& batch,
                       const std::vector<std::int64_t>& contract) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < a.ndim(); ++d)
    if (std::find(batch.begin(), batch.end(), static_cast<std::int64_t>(d)) == batch.end() &&
        std::find(contract.begin(), contract.end(), static_cast<std::int64_t>(d)) == contract.end())
      n *= a.shape[d];
  return n;
}

// exp/log/sin/...: dozens of operations (on a GPU, in double precision for accuracy)
bool transcendental_or_pow(Prim p) {
  switch (p) {
  JX_CASES_TRANSCENDENTAL:
  case Prim::pow: return true;
    default: return false;
  }
}

bool alu_prim(Prim p) {
  switch (prim_kind(p)) {
    case PrimKind::elementwise: return p != Prim::stop_gradient;
    default: return false;
  }
}

class Lowering {
 public:
  Lowering(const Jaxpr& j, const LowerOptions& o) : j_(j), o_(o) {}

  Program run() {
    std::vector<EP> val(j_.avals.size());
    std::vector<int> uses(j_.avals.size(), 0);
    for (const Eqn& e : j_.eqns) {
      std::set<int> once;
      for (const Atom& a : e.in)
        if (!a.is_literal() && once.insert(a.var).second) ++uses[a.var];
    }
    for (const Atom& a : j_.outs)
      if (!a.is_literal()) ++uses[a.var];
    for (int v : j_.invars) val[v] = load_of(new_buffer(j_.avals[v]), j_.avals[v]);
    for (int v : j_.constvars) val[v] = load_of(new_buffer(j_.avals[v]), j_.avals[v]);
    p_.num_inputs = static_cast<int>(p_.buffers.size());
    for (const Eqn& e : j_.eqns) {
      std::vector<EP> args;
      for (const Atom& a : e.in) args.push_back(a.is_literal() ? constant(a.value, a.dtype, {}) : val[a.var]);
      auto outs = lower_eqn(e, args);
      for (std::size_t k = 0; k < e.out.size(); ++k) {
        EP r = outs[k];
        const bool inline_it = footprint({r}).reds.empty() && (o_.inline_multi_use || recomputed(r));
        if (uses[e.out[k]] > 1 && r->k != Expr::K::load && r->k != Expr::K::constant && !inline_it)
          r = load_of(materialize(r), j_.avals[e.out[k]]);
        val[e.out[k]] = r;
      }
    }
    for (const Atom& a : j_.outs)
      p_.outputs.push_back(materialize(a.is_literal() ? constant(a.value, a.dtype, {}) : val[a.var]));
    schedule_by_level();
    jx::insert_frees(p_);
    return std::move(p_);
  }

 private:
  // Inputs + output within the budget, + a scratch buffer when a reduction in the kernel (or the
  // one about to be made, `new_reduction` elements per output) is large enough for the backend to
  // split it over workgroups.
  bool fits(const Footprint& f, std::int64_t new_reduction = 0) const {
    if (o_.max_buffers <= 0) return true;
    bool scratch = o_.scratch_reduction_min > 0 && new_reduction >= o_.scratch_reduction_min;
    for (const Pending* r : f.reds)
      scratch =
          scratch || (o_.scratch_reduction_min > 0 && reduced_count(r->space, r->axes) >= o_.scratch_reduction_min);
    return static_cast<int>(f.bufs.size()) + 1 + (scratch ? 1 : 0) <= o_.max_buffers;
  }
  static std::int64_t reduced_count(const Shape& space, const std::vector<std::int64_t>& axes) {
    std::int64_t n = 1;
    for (auto a : axes) n *= space[a];
    return n;
  }
  // The operand to materialize first: the one binding the most buffers (those holding a
  // reduction first when the kernel would hold several); -1 when all are buffers or constants.
  static int heaviest_operand(const std::vector<EP>& args, bool several_reductions) {
    int pick = -1;
    std::size_t most = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i]->k == Expr::K::load || args[i]->k == Expr::K::constant) continue;
      Footprint fi = footprint({args[i]});
      const std::size_t weight = fi.bufs.size() + (several_reductions && !fi.reds.empty() ? 1000 : 0);
      if (pick < 0 || weight > most) {
        pick = static_cast<int>(i);
        most = weight;
      }
    }
    return pick;
  }
  // A reduction's body gives up buffers (its heaviest operand materialized, or all of it) until
  // the kernel fits with the reduction's scratch buffer.
  EP fit_reduction_body(EP body, std::int64_t reduced) {
    while (!fits(footprint({body}), reduced) && body->k == Expr::K::alu) {
      const int pick = heaviest_operand(body->args, false);
      if (pick < 0) return materialized(body);
      std::vector<EP> args = body->args;
      args[pick] = materialized(args[pick]);
      body = alu(body->prim, body->dtype, body->shape, std::move(args));
    }
    return body;
  }

  // A multi-use value cheap enough to recompute in every consumer (see LowerOptions).
  bool recomputed(const EP& r) const {
    if (o_.recompute_nodes == 0) return false;
    bool cheap = true;
    std::size_t nodes = 0;
    visit_nodes(r, [&](const Expr& x) {
      if (++nodes > o_.recompute_nodes) cheap = false;
      if (x.k == Expr::K::alu && !o_.recompute_expensive && (transcendental_or_pow(x.prim) || x.prim == Prim::div))
        cheap = false;
      return cheap;
    });
    return cheap;
  }

  // A transcendental (or pow) over few elements broadcast over many (LowerOptions): computed once,
  // not again for every element it is broadcast to.
  bool transcendental_broadcast(const EP& r, const AVal& out) const {
    constexpr std::int64_t kMinOut = 4096, kMinRatio = 64;
    if (!o_.hoist_transcendentals || r->k != Expr::K::alu || out.size() < kMinOut ||
        out.size() < kMinRatio * std::max<std::int64_t>(numel(r->shape), 1))
      return false;
    bool found = false;
    visit_nodes(r, [&](const Expr& x) {
      found = x.k == Expr::K::alu && transcendental_or_pow(x.prim);
      return !found;
    });
    return found;
  }

  int new_buffer(const AVal& a) {
    p_.buffers.push_back(a);
    return static_cast<int>(p_.buffers.size()) - 1;
  }

  EP materialized(const EP& e) { return load_of(materialize(e), {e->dtype, e->shape}); }

  std::vector<EP> lower_eqn(const Eqn& e, std::vector<EP> args) {
    const AVal& out = j_.avals[e.out[0]];
    const PrimParams& pr = e.params;
    Memo memo;
    if (alu_prim(e.prim)) return {fuse_elementwise(e.prim, out, std::move(args))};
    switch (e.prim) {
      case Prim::stop_gradient: return {args[0]};
      case Prim::iota: {
        Expr x{Expr::K::iota, out.dtype, out.shape};
        x.dim = static_cast<int>(pr.axis);
        return {make(std::move(x))};
      }
      case Prim::reduce_sum:
      case Prim::reduce_max:
      case Prim::reduce_min:
      case Prim::reduce_prod: {
        EP a = without_reduction(args[0]);
        if (pr.axes.empty()) return {a};
        a = fit_reduction_body(a, reduced_count(a->shape, pr.axes));
        Pending p{a->shape, pr.axes, e.prim, a};
        if (EP u = unrolled(p, out)) return {u};
        Expr r{Expr::K::reduce, out.dtype, out.shape};
        r.red = std::make_shared<const Pending>(std::move(p));
        return {make(std::move(r))};
      }
      case Prim::dot_general: return {lower_dot(e, args, out)};
      case Prim::transpose: {
        std::vector<std::int64_t> dmap(pr.perm.size());
        for (std::size_t d = 0; d < pr.perm.size(); ++d) dmap[pr.perm[d]] = static_cast<std::int64_t>(d);
        return {view(args[0], [&](const EP& a, Memo& m) { return remap(a, out.shape, dmap, m); })};
      }
      case Prim::broadcast_in_dim:
        if (transcendental_broadcast(args[0], out)) args[0] = materialized(args[0]);
        return {view(args[0], [&](const EP& a, Memo& m) { return remap(a, out.shape, pr.dims, m); })};
      case Prim::reshape: return {view(args[0], [&](const EP& a, Memo& m) { return reshape_e(a, out.shape, m); })};
      case Prim::slice:
        return {view(args[0], [&](const EP& a, Memo& m) { return restride(a, out.shape, pr.start, pr.strides, m); })};
      case Prim::rev: {
        std::vector<std::int64_t> start(out.ndim(), 0), step(out.ndim(), 1);
        for (auto ax : pr.axes)
          if (out.shape[ax] > 0) {
            start[ax] = out.shape[ax] - 1;
            step[ax] = -1;
          }
        return {view(args[0], [&](const EP& a, Memo& m) { return restride(a, out.shape, start, step, m); })};
      }
      case Prim::scan:
      case Prim::associative_scan:
      case Prim::while_loop:
      case Prim::cond: return opaque(Step::Kind::control, p_.controls, e, args);
      case Prim::concatenate: return concatenate(e, std::move(args));
      case Prim::pad:  // the replay fusion model materializes pad as its own step
        return o_.inline_multi_use ? opaque(Step::Kind::routine, p_.routines, e, args)
                                   : std::vector<EP>{pad(e, args[0])};
      default: return opaque(Step::Kind::routine, p_.routines, e, args);
    }
  }

  template <class F>
  EP view(const EP& a, F f) {
    Memo memo;
    if (EP r = f(a, memo)) return r;
    Memo again;
    return f(materialized(a), again);  // a contiguous buffer takes every view
  }

  EP fuse_elementwise(Prim p, const AVal& out, std::vector<EP> args) {
    for (;;) {
      Footprint f = footprint(args);
      if (f.reds.size() <= 1 && fits(f)) break;
      const int pick = heaviest_operand(args, f.reds.size() > 1);
      if (pick < 0)
        throw Error(fmt::format("jit: buffer budget {} is too small for {} with {} operand buffers", o_.max_buffers,
                                prim_name(p), f.bufs.size()));
      args[pick] = materialized(args[pick]);
    }
    return alu(p, out.dtype, out.shape, std::move(args));
  }

  EP lower_dot(const Eqn& e, std::vector<EP>& args, const AVal& out) {
    const PrimParams& pr = e.params;
    const AVal &la = j_.aval_of(e.in[0]), &ra = j_.aval_of(e.in[1]);
    const auto nb = pr.lhs_batch.size(), nc = pr.lhs_contract.size();
    // An elementwise operand is fused into the reduction's body when it is recomputed at most
    // kDotRecompute times (the other operand's free size: batched small matrices), else
    // materialized; the body must fit the budget.
    constexpr std::int64_t kDotRecompute = 4;
    const std::int64_t recompute[2] = {free_size(ra, pr.rhs_batch, pr.rhs_contract),
                                       free_size(la, pr.lhs_batch, pr.lhs_contract)};
    for (std::size_t i = 0; i < 2; ++i) {
      args[i] = without_reduction(args[i]);
      if (args[i]->k != Expr::K::load && !o_.inline_multi_use && recompute[i] > kDotRecompute)
        args[i] = materialized(args[i]);
    }
    while (!fits(footprint(args), nc == 0 ? 0 : reduced_count(la.shape, pr.lhs_contract))) {
      const std::size_t i = footprint({args[0]}).bufs.size() >= footprint({args[1]}).bufs.size() ? 0 : 1;
      const std::size_t pick = args[i]->k != Expr::K::load ? i : 1 - i;
      if (args[pick]->k == Expr::K::load) break;  // two buffers: any budget of 3 fits
      args[pick] = materialized(args[pick]);
    }
    const std::size_t nfree = out.ndim() - nb;
    Shape space = out.shape;
    for (auto d : pr.lhs_contract) space.push_back(la.shape[d]);
    auto dims_of = [&](const AVal& a, const std::vector<std::int64_t>& batch, const std::vector<std::int64_t>& contract,
                       std::size_t free_start) {
      std::vector<std::int64_t> m(a.ndim(), -1);
      for (std::size_t i = 0; i < batch.size(); ++i) m[batch[i]] = static_cast<std::int64_t>(i);
      for (std::size_t i = 0; i < contract.size(); ++i) m[contract[i]] = static_cast<std::int64_t>(nb + nfree + i);
      std::size_t f = free_start;
      for (std::size_t d = 0; d < a.ndim(); ++d)
        if (m[d] < 0) m[d] = static_cast<std::int64_t>(f++);
      return m;
    };
    const std::size_t lfree = la.ndim() - nb - nc;
    Memo m1, m2;
    EP l = remap(args[0], space, dims_of(la, pr.lhs_batch, pr.lhs_contract, nb), m1);
    EP r = remap(args[1], space, dims_of(ra, pr.rhs_batch, pr.rhs_contract, nb + lfree), m2);
    EP body = alu(Prim::mul, out.dtype, space, {l, r});
    if (nc == 0) return body;
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < nc; ++i) axes.push_back(static_cast<std::int64_t>(nb + nfree + i));
    Pending p{space, axes, Prim::reduce_sum, body};
    if (EP u = unrolled(p, out)) return u;
    Expr red{Expr::K::reduce, out.dtype, out.shape};
    red.red = std::make_shared<const Pending>(std::move(p));
    return make(std::move(red));
  }

  // A sum of at most kUnrollTerms elements per output (batched small matrix products, sums over
  // short axes) becomes an elementwise expression with the reduction's own arithmetic: the terms
  // in the body's type, added in row-major order of the reduced index to a zero of the
  // accumulator type, rounded to the output type. Float32 accumulates as the backend's own
  // reduction loops do: in float for 3 to LowerOptions::f32_sum_max_terms terms (vulkan's short
  // sums), else in double (as the oracle) where the backend has doubles, except for two terms:
  // the double sum of two floats rounded to float is the float sum. Nothing is left
  // pending, so the value fuses into its consumers (and further products) like any elementwise
  // one; a chain of products recomputes its operands, bounded by LowerOptions::unroll_nodes. Only where
  // LowerOptions::unroll_sums (launch-bound backends: on a CPU the recomputation costs more than
  // the kernels it saves), and not in the replay fusion model (the JS runtime keeps every
  // reduction a kernel of its own).
  static constexpr std::int64_t kUnrollTerms = 8;
  EP unrolled(const Pending& p, const AVal& out) {
    const DType bd = p.body->dtype;
    if (!o_.unroll_sums || o_.inline_multi_use || p.op != Prim::reduce_sum || bd != out.dtype) return nullptr;
    if (bd != DType::float32 && bd != DType::float64 && bd != DType::int32) return nullptr;
    std::vector<std::int64_t> axes = p.axes;
    std::sort(axes.begin(), axes.end());
    std::int64_t terms = 1;
    for (auto ax : axes) terms *= p.space[ax];
    if (terms < 1 || terms > kUnrollTerms) return nullptr;
    const bool f32_acc = terms <= o_.f32_sum_max_terms;  // as the backend's reductions
    const DType at = bd == DType::float32 && terms > 2 && o_.f64 && !f32_acc ? DType::float64 : bd;
    Shape one = p.space;
    std::vector<std::int64_t> dmap(p.space.size(), 0);  // reduced dims (now of size 1) go anywhere
    for (std::size_t d = 0, k = 0; d < p.space.size(); ++d) {
      if (std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(d)))
        one[d] = 1;
      else
        dmap[d] = static_cast<std::int64_t>(k++);
    }
    EP acc = constant(0.0, at, out.shape);
    std::vector<std::int64_t> start(p.space.size(), 0), step(p.space.size(), 1);
    for (std::int64_t t = 0; t < terms; ++t) {
      for (std::int64_t r = t, i = static_cast<std::int64_t>(axes.size()) - 1; i >= 0; --i) {
        start[axes[i]] = r % p.space[axes[i]];
        r /= p.space[axes[i]];
      }
      Memo m1, m2;
      EP term = restride(p.body, one, start, step, m1);
      if (term) term = remap(term, out.shape, dmap, m2);
      if (!term) return nullptr;
      if (at != bd) term = alu(Prim::convert, at, out.shape, {term});
      acc = alu(Prim::add, at, out.shape, {acc, term});
    }
    if (at != out.dtype) acc = alu(Prim::convert, out.dtype, out.shape, {acc});
    if (dag_size(acc) > o_.unroll_nodes) return nullptr;
    ++p_.unrolled_sums;
    return acc;
  }

  // An opaque step (routine, or a control primitive such as scan) over materialized operands.
  std::vector<EP> opaque(Step::Kind kind, std::vector<Op>& list, const Eqn& e, const std::vector<EP>& args) {
    std::vector<AVal> outs;
    for (int o : e.out) outs.push_back(j_.avals[o]);
    return opaque(kind, list, e.prim, e.params, args, outs);
  }
  std::vector<EP> opaque(Step::Kind kind, std::vector<Op>& list, Prim prim, const PrimParams& params,
                         const std::vector<EP>& args, const std::vector<AVal>& out_avals) {
    Step st{kind, static_cast<int>(list.size()), {}, {}};
    Op op{prim, params, {}, {}};
    for (const EP& a : args) {
      st.in.push_back(materialize(a));
      op.in.push_back({a->dtype, a->shape});
    }
    std::vector<EP> outs;
    for (const AVal& av : out_avals) {
      st.out.push_back(new_buffer(av));
      op.out.push_back(av);
      outs.push_back(load_of(st.out.back(), av));
    }
    list.push_back(std::move(op));
    p_.steps.push_back(std::move(st));
    return outs;
  }

  // concatenate and pad fuse into their consumers as selects over windows of their operands:
  // out[i] = x_j[i - o_j] where o_j <= i_ax < o_j + n_j (pad: the value outside the window).
  // Where a window does not hold, its loads are clamped into their buffer and the select
  // discards what they read. Operands with a pending reduction are materialized first.
  EP window(const EP& x, const Shape& ns, const std::vector<std::int64_t>& lo) {
    std::vector<std::int64_t> start(ns.size()), step(ns.size(), 1);
    for (std::size_t d = 0; d < ns.size(); ++d) start[d] = -lo[d];
    Memo m, c;
    return clamped(restride(x, ns, start, step, m), c);
  }
  static EP index_cmp(Prim p, const Shape& s, std::int64_t ax, std::int64_t bound) {
    return alu(p, DType::bool_, s, {index_of(s, ax), constant(static_cast<double>(bound), DType::int32, s)});
  }
  EP without_reduction(const EP& x) { return footprint({x}).reds.empty() ? x : materialized(x); }

  std::vector<EP> concatenate(const Eqn& e, std::vector<EP> args) {
    const AVal& out = j_.avals[e.out[0]];
    const std::int64_t ax = e.params.axis;
    for (EP& a : args) a = without_reduction(a);
    for (;;) {
      EP acc;
      std::int64_t end = out.shape[ax];
      for (std::size_t j = args.size(); j-- > 0;) {
        const std::int64_t n = args[j]->shape[ax];
        end -= n;
        if (numel(args[j]->shape) == 0) continue;
        std::vector<std::int64_t> lo(out.ndim(), 0);
        lo[ax] = end;
        EP w = window(args[j], out.shape, lo);
        acc = acc ? alu(Prim::select, out.dtype, out.shape, {index_cmp(Prim::lt, out.shape, ax, end + n), w, acc}) : w;
      }
      if (!acc) return {constant(0.0, out.dtype, out.shape)};  // empty
      if (fits(footprint({acc}))) return {acc};
      // over the budget: materialize the operand binding the most buffers, or (all plain
      // buffers) fall back to the concatenate routine
      int pick = -1;
      std::size_t most = 1;
      for (std::size_t j = 0; j < args.size(); ++j)
        if (const std::size_t b = footprint({args[j]}).bufs.size(); args[j]->k != Expr::K::load && b >= most) {
          pick = static_cast<int>(j);
          most = b;
        }
      if (pick < 0) return concatenate_routine(e, std::move(args));
      args[pick] = materialized(args[pick]);
    }
  }

  EP pad(const Eqn& e, const EP& arg) {
    const AVal& out = j_.avals[e.out[0]];
    const PrimParams& pr = e.params;
    if (numel(arg->shape) == 0) return constant(pr.value, out.dtype, out.shape);
    EP x = without_reduction(arg), inside;
    for (std::size_t d = 0; d < out.ndim(); ++d) {
      if (pr.lo[d] == 0 && pr.hi[d] == 0) continue;
      EP c = index_cmp(Prim::lt, out.shape, static_cast<std::int64_t>(d), pr.lo[d] + x->shape[d]);
      if (pr.lo[d] > 0)
        c = alu(Prim::logical_and, DType::bool_, out.shape,
                {index_cmp(Prim::ge, out.shape, static_cast<std::int64_t>(d), pr.lo[d]), c});
      inside = inside ? alu(Prim::logical_and, DType::bool_, out.shape, {inside, c}) : c;
    }
    if (!inside) return x;
    return alu(Prim::select, out.dtype, out.shape,
               {inside, window(x, out.shape, pr.lo), constant(pr.value, out.dtype, out.shape)});
  }

  // A concatenate routine binding more buffers than the budget becomes a tree of concatenates
  // of at most budget-1 operands each.
  std::vector<EP> concatenate_routine(const Eqn& e, std::vector<EP> level) {
    const int per = o_.max_buffers > 2 ? o_.max_buffers - 1 : 0;
    const auto ax = static_cast<std::size_t>(e.params.axis);
    while (per > 0 && static_cast<int>(level.size()) > per) {
      std::vector<EP> next;
      for (std::size_t i = 0; i < level.size(); i += static_cast<std::size_t>(per)) {
        std::vector<EP> chunk(
            level.begin() + static_cast<std::ptrdiff_t>(i),
            level.begin() + static_cast<std::ptrdiff_t>(std::min(level.size(), i + static_cast<std::size_t>(per))));
        if (chunk.size() == 1) {
          next.push_back(chunk[0]);
          continue;
        }
        Shape sh = chunk[0]->shape;
        sh[ax] = 0;
        for (const EP& c : chunk) sh[ax] += c->shape[ax];
        next.push_back(opaque(Step::Kind::routine, p_.routines, Prim::concatenate, e.params, chunk,
                              {AVal{chunk[0]->dtype, sh}})[0]);
      }
      level = std::move(next);
    }
    return opaque(Step::Kind::routine, p_.routines, e, level);
  }

  // ---- kernel emission ----
  struct Emitter {
    Kernel& k;
    std::map<int, int> inputs;  // program buffer -> kernel input
    std::vector<int> order;     // kernel input -> program buffer
    const std::vector<AVal>& buffers;
    std::map<std::pair<const Expr*, int>, int> memo;  // (expr, context) -> node

    int node(KNode n) {
      for (std::size_t i = 0; i < k.nodes.size(); ++i)
        if (k.nodes[i] == n) return static_cast<int>(i);
      k.nodes.push_back(n);
      return static_cast<int>(k.nodes.size()) - 1;
    }
    // dmap: expression dim -> space dim (context 0: identity over the space; 1: epilogue)
    int emit(const EP& e, const std::vector<std::int64_t>& dmap, int ctx) {
      if (auto it = memo.find({e.get(), ctx}); it != memo.end()) return it->second;
      KNode n{};
      n.dtype = e->dtype;
      switch (e->k) {
        case Expr::K::load: {
          auto [it, fresh] = inputs.emplace(e->buffer, static_cast<int>(order.size()));
          if (fresh) {
            order.push_back(e->buffer);
            k.inputs.push_back(buffers[e->buffer]);
          }
          KLoad l{it->second, e->offset, std::vector<std::int64_t>(k.space.size(), 0), e->clamp, e->indexed};
          if (e->indexed) {
            l.offset = 0;
            n.a = emit(e->args[0], dmap, ctx);
          } else {
            for (std::size_t d = 0; d < dmap.size(); ++d) l.strides[dmap[d]] = e->strides[d];
          }
          auto li = std::find(k.loads.begin(), k.loads.end(), l);
          n.kind = KNodeKind::load;
          n.load = static_cast<int>(li - k.loads.begin());
          if (li == k.loads.end()) k.loads.push_back(l);
          break;
        }
        case Expr::K::constant:
          n.kind = KNodeKind::constant;
          n.value = e->value;
          break;
        case Expr::K::iota:
          n.kind = KNodeKind::iota;
          n.dim = static_cast<int>(dmap[e->dim]);
          break;
        case Expr::K::reduce: n.kind = KNodeKind::reduce_result; break;
        case Expr::K::alu: {
          n.kind = KNodeKind::alu;
          n.prim = e->prim;
          int* slots[3] = {&n.a, &n.b, &n.c};
          for (std::size_t i = 0; i < e->args.size(); ++i) *slots[i] = emit(e->args[i], dmap, ctx);
          break;
        }
      }
      return memo[{e.get(), ctx}] = node(n);
    }
  };

  int materialize(const EP& e) {
    if (is_full_buffer(*e, p_.buffers)) return e->buffer;
    Footprint f = footprint({e});
    const Pending* red = f.reds.empty() ? nullptr : *f.reds.begin();
    Kernel k;
    k.out = {e->dtype, e->shape};
    k.space = red ? red->space : e->shape;
    Emitter em{k, {}, {}, p_.buffers, {}};
    std::vector<std::int64_t> ident(k.space.size());
    std::iota(ident.begin(), ident.end(), 0);
    if (red) {
      k.reduce_axes = red->axes;
      k.reduce_op = red->op;
      k.body = em.emit(red->body, ident, 0);
      std::vector<std::int64_t> outdims;
      for (std::size_t d = 0; d < k.space.size(); ++d)
        if (std::find(red->axes.begin(), red->axes.end(), static_cast<std::int64_t>(d)) == red->axes.end())
          outdims.push_back(static_cast<std::int64_t>(d));
      k.epilogue = e->k == Expr::K::reduce ? -1 : em.emit(e, outdims, 1);
    } else {
      k.body = em.emit(e, ident, 0);
    }
    k.name = kernel_name(k);
    k.scratch_binding = o_.max_bindings <= 0 || k.buffers() + 1 <= o_.max_bindings;
    // the same kernel over the same buffers already ran: its output is this value
    std::string key = k.key() + fmt::format("|{}", fmt::join(em.order, ","));
    if (auto it = computed_.find(key); it != computed_.end()) return it->second;
    const int out = new_buffer(k.out);
    computed_.emplace(std::move(key), out);
    p_.steps.push_back({Step::Kind::kernel, static_cast<int>(p_.kernels.size()), em.order, {out}});
    p_.kernels.push_back(std::move(k));
    return out;
  }

  static std::string kernel_name(const Kernel& k) {
    std::vector<std::string> ops;
    if (k.is_reduction()) ops.push_back(std::string(prim_name(k.reduce_op)));
    for (const KNode& n : k.nodes)
      if (n.kind == KNodeKind::alu) {
        std::string s(prim_name(n.prim));
        if (std::find(ops.begin(), ops.end(), s) == ops.end() && ops.size() < 4) ops.push_back(s);
      }
    if (ops.empty()) ops.push_back(k.nodes.size() == 1 && k.nodes[0].kind == KNodeKind::load ? "copy" : "fill");
    return fmt::format("{}", fmt::join(ops, "_"));
  }

  // Steps in order of dependency level (each as early as its inputs allow; ties keep program
  // order): independent kernels sit next to each other, so a backend that orders dispatches with
  // barriers (vulkan) needs one per level rather than one per kernel.
  void schedule_by_level() {
    std::vector<int> made_at(p_.buffers.size(), -1), level(p_.steps.size(), 0);
    for (std::size_t i = 0; i < p_.steps.size(); ++i) {
      for (int b : p_.steps[i].in) level[i] = std::max(level[i], made_at[b] + 1);
      for (int b : p_.steps[i].out) made_at[b] = level[i];
    }
    std::vector<std::size_t> order(p_.steps.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return level[a] < level[b]; });
    std::vector<Step> steps;
    for (auto i : order) steps.push_back(std::move(p_.steps[i]));
    p_.steps = std::move(steps);
  }

  const Jaxpr& j_;
  LowerOptions o_;
  std::map<std::string, int> computed_;  // kernel key | input buffers -> its output buffer
  Program p_;
};

}  // namespace

void insert_frees(Program& p) {
  std::vector<int> last(p.buffers.size(), -1);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    for (int b : p.steps[i].in) last[b] = static_cast<int>(i);
    for (int b : p.steps[i].out) last[b] = std::max(last[b], static_cast<int>(i));
  }
  std::set<int> outs(p.outputs.begin(), p.outputs.end());
  std::vector<Step> steps;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    steps.push_back(p.steps[i]);
    Step fr{Step::Kind::free, -1, {}, {}};
    for (std::size_t b = p.num_inputs; b < p.buffers.size(); ++b)
      if (last[b] == static_cast<int>(i) && !outs.count(static_cast<int>(b))) fr.in.push_back(static_cast<int>(b));
    if (!fr.in.empty()) steps.push_back(std::move(fr));
  }
  p.steps = std::move(steps);
}

// Composites (inv) become their steps first; a jaxpr that had some is simplified again, as the
// traced steps of an eager program or a scan body would have been.
Program lower(const Jaxpr& j, const LowerOptions& o) {
  if (!has_composites(j)) return Lowering(j, o).run();
  return Lowering(simplify(expand_composites(j)), o).run();
}

}  // namespace jx
