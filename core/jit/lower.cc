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
#include "core/jit/program.h"

namespace jx {
namespace {

struct Pending;
struct Expr;
using EP = std::shared_ptr<const Expr>;

struct Expr {
  enum class K : std::uint8_t { load, constant, iota, alu, reduce } k;
  DType dtype;
  Shape shape;
  int buffer = -1;  // load
  std::int64_t offset = 0;
  std::vector<std::int64_t> strides;
  double value = 0.0;  // constant
  int dim = 0;         // iota
  Prim prim = Prim::add;  // alu
  std::vector<EP> args;
  std::shared_ptr<const Pending> red;  // reduce
};

struct Pending {
  Shape space;
  std::vector<std::int64_t> axes;
  Prim op;
  EP body;
};

EP make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

EP load_of(int buffer, const AVal& a) {
  return make({Expr::K::load, a.dtype, a.shape, buffer, 0, row_major_strides(a.shape)});
}
EP constant(double v, DType d, Shape s) {
  Expr e{Expr::K::constant, d, std::move(s)};
  e.value = v;
  return make(std::move(e));
}
EP alu(Prim p, DType d, Shape s, std::vector<EP> args) {
  Expr e{Expr::K::alu, d, std::move(s)};
  e.prim = p;
  e.args = std::move(args);
  return make(std::move(e));
}

bool is_full_buffer(const Expr& e, const std::vector<AVal>& buffers) {
  return e.k == Expr::K::load && e.offset == 0 && buffers[e.buffer].shape == e.shape && e.strides == row_major_strides(e.shape);
}

void collect(const EP& e, std::set<int>& bufs, std::set<const Pending*>& reds, std::set<const Expr*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e->k == Expr::K::load) bufs.insert(e->buffer);
  if (e->k == Expr::K::reduce) {
    reds.insert(e->red.get());
    collect(e->red->body, bufs, reds, seen);
  }
  for (const EP& a : e->args) collect(a, bufs, reds, seen);
}

struct Footprint {
  std::set<int> bufs;
  std::set<const Pending*> reds;
};
Footprint footprint(const std::vector<EP>& es) {
  Footprint f;
  std::set<const Expr*> seen;
  for (const EP& e : es) collect(e, f.bufs, f.reds, seen);
  return f;
}

// ---- view rewrites (nullptr: not expressible, the caller materializes) ----

using Memo = std::map<const Expr*, EP>;

// New dim dmap[d] takes old dim d; other new dims broadcast.
EP remap(const EP& e, const Shape& ns, const std::vector<std::int64_t>& dmap, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load:
      r.strides.assign(ns.size(), 0);
      for (std::size_t d = 0; d < dmap.size(); ++d)
        if (e->shape[d] != 1) r.strides[dmap[d]] = e->strides[d];
      break;
    case Expr::K::constant: break;
    case Expr::K::iota:
      if (e->shape[e->dim] == 1) return memo[e.get()] = constant(0.0, e->dtype, ns);
      r.dim = static_cast<int>(dmap[e->dim]);
      break;
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = remap(a, ns, dmap, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
}

// x[start + step·i] per axis (rev: start = n-1, step = -1).
EP restride(const EP& e, const Shape& ns, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load:
      for (std::size_t d = 0; d < ns.size(); ++d) {
        r.offset += start[d] * e->strides[d];
        r.strides[d] = e->strides[d] * step[d];
      }
      break;
    case Expr::K::constant: break;
    case Expr::K::iota: {
      const int d = e->dim;
      if (start[d] == 0 && step[d] == 1) break;
      EP i = make(r);
      EP scaled = step[d] == 1 ? i : alu(Prim::mul, e->dtype, ns, {i, constant(static_cast<double>(step[d]), e->dtype, ns)});
      return memo[e.get()] = alu(Prim::add, e->dtype, ns, {scaled, constant(static_cast<double>(start[d]), e->dtype, ns)});
    }
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = restride(a, ns, start, step, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
}

// Strides of a view of shape `os`/`ost` reshaped to `ns` without a copy, if possible (the
// old dims merged into each new dim must be contiguous with each other).
std::optional<std::vector<std::int64_t>> reshape_strides(const Shape& os, const std::vector<std::int64_t>& ost, const Shape& ns) {
  std::vector<std::int64_t> out(ns.size(), 0);
  if (numel(os) == 0) return out;
  Shape o, ot;
  for (std::size_t i = 0; i < os.size(); ++i)
    if (os[i] != 1) {
      o.push_back(os[i]);
      ot.push_back(ost[i]);
    }
  std::vector<std::size_t> nidx;
  Shape n;
  for (std::size_t i = 0; i < ns.size(); ++i)
    if (ns[i] != 1) {
      n.push_back(ns[i]);
      nidx.push_back(i);
    }
  std::vector<std::int64_t> nt(n.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < n.size() && oi < o.size()) {
    std::int64_t np = n[ni], op = o[oi];
    while (np != op) {
      if (np < op) np *= n[nj++];
      else op *= o[oj++];
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)
      if (ot[k] != o[k + 1] * ot[k + 1]) return std::nullopt;
    nt[nj - 1] = ot[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) nt[k - 1] = nt[k] * n[k];
    ni = nj++;
    oi = oj++;
  }
  for (std::size_t k = 0; k < n.size(); ++k) out[nidx[k]] = nt[k];
  return out;
}

EP reshape_e(const EP& e, const Shape& ns, Memo& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = *e;
  r.shape = ns;
  switch (e->k) {
    case Expr::K::load: {
      auto st = reshape_strides(e->shape, e->strides, ns);
      if (!st) return nullptr;
      r.strides = *st;
      break;
    }
    case Expr::K::constant: break;
    case Expr::K::iota:
      if (e->shape != ns) return nullptr;
      break;
    case Expr::K::alu:
      for (EP& a : r.args)
        if (!(a = reshape_e(a, ns, memo))) return nullptr;
      break;
    case Expr::K::reduce: return nullptr;
  }
  return memo[e.get()] = make(std::move(r));
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
      for (const Atom& a : e.in)
        args.push_back(a.is_literal() ? constant(a.value, a.dtype, {}) : val[a.var]);
      auto outs = lower_eqn(e, args);
      for (std::size_t k = 0; k < e.out.size(); ++k) {
        EP r = outs[k];
        const bool inline_it = o_.inline_multi_use && footprint({r}).reds.empty();
        if (uses[e.out[k]] > 1 && r->k != Expr::K::load && r->k != Expr::K::constant && !inline_it)
          r = load_of(materialize(r), j_.avals[e.out[k]]);
        val[e.out[k]] = r;
      }
    }
    for (const Atom& a : j_.outs)
      p_.outputs.push_back(materialize(a.is_literal() ? constant(a.value, a.dtype, {}) : val[a.var]));
    insert_frees();
    return std::move(p_);
  }

 private:
  bool fits(std::size_t input_buffers) const {
    return o_.max_buffers <= 0 || static_cast<int>(input_buffers) + 1 <= o_.max_buffers;
  }

  int new_buffer(const AVal& a) {
    p_.buffers.push_back(a);
    return static_cast<int>(p_.buffers.size()) - 1;
  }

  EP materialized(const EP& e) { return load_of(materialize(e), {e->dtype, e->shape}); }

  std::vector<EP> lower_eqn(const Eqn& e, std::vector<EP> args) {
    const AVal& out = j_.avals[e.out[0]];
    const Params& pr = e.params;
    Memo memo;
    if (alu_prim(e.prim)) return {fuse_elementwise(e.prim, out, std::move(args))};
    switch (e.prim) {
      case Prim::stop_gradient: return {args[0]};
      case Prim::iota: {
        Expr x{Expr::K::iota, out.dtype, out.shape};
        x.dim = static_cast<int>(pr.axis);
        return {make(std::move(x))};
      }
      case Prim::reduce_sum: case Prim::reduce_max: case Prim::reduce_min: case Prim::reduce_prod: {
        EP a = footprint({args[0]}).reds.empty() ? args[0] : materialized(args[0]);
        if (pr.axes.empty()) return {a};
        Expr r{Expr::K::reduce, out.dtype, out.shape};
        r.red = std::make_shared<const Pending>(Pending{a->shape, pr.axes, e.prim, a});
        return {make(std::move(r))};
      }
      case Prim::dot_general: return {lower_dot(e, args, out)};
      case Prim::transpose: {
        std::vector<std::int64_t> dmap(pr.perm.size());
        for (std::size_t d = 0; d < pr.perm.size(); ++d) dmap[pr.perm[d]] = static_cast<std::int64_t>(d);
        return {view(args[0], [&](const EP& a, Memo& m) { return remap(a, out.shape, dmap, m); })};
      }
      case Prim::broadcast_in_dim:
        return {view(args[0], [&](const EP& a, Memo& m) { return remap(a, out.shape, pr.dims, m); })};
      case Prim::reshape:
        return {view(args[0], [&](const EP& a, Memo& m) { return reshape_e(a, out.shape, m); })};
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
      case Prim::scan: case Prim::associative_scan: return opaque(Step::Kind::control, p_.controls, e, args);
      case Prim::concatenate: return concatenate(e, std::move(args));
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
      if (f.reds.size() <= 1 && fits(f.bufs.size())) break;
      int pick = -1;
      std::size_t most = 0;
      for (std::size_t i = 0; i < args.size(); ++i) {
        Footprint fi = footprint({args[i]});
        if (args[i]->k == Expr::K::load || args[i]->k == Expr::K::constant) continue;
        const std::size_t weight = fi.bufs.size() + (f.reds.size() > 1 && !fi.reds.empty() ? 1000 : 0);
        if (pick < 0 || weight > most) {
          pick = static_cast<int>(i);
          most = weight;
        }
      }
      if (pick < 0)
        throw Error(fmt::format("jit: buffer budget {} is too small for {} with {} operand buffers", o_.max_buffers, prim_name(p),
                                f.bufs.size()));
      args[pick] = materialized(args[pick]);
    }
    return alu(p, out.dtype, out.shape, std::move(args));
  }

  EP lower_dot(const Eqn& e, std::vector<EP>& args, const AVal& out) {
    const Params& pr = e.params;
    for (EP& a : args)
      if (a->k != Expr::K::load) a = materialized(a);
    const AVal &la = j_.aval_of(e.in[0]), &ra = j_.aval_of(e.in[1]);
    const auto nb = pr.lhs_batch.size(), nc = pr.lhs_contract.size();
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
    Expr red{Expr::K::reduce, out.dtype, out.shape};
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < nc; ++i) axes.push_back(static_cast<std::int64_t>(nb + nfree + i));
    red.red = std::make_shared<const Pending>(Pending{space, axes, Prim::reduce_sum, body});
    return make(std::move(red));
  }

  // An opaque step (routine, or a control primitive such as scan) over materialized operands.
  std::vector<EP> opaque(Step::Kind kind, std::vector<Op>& list, const Eqn& e, const std::vector<EP>& args) {
    std::vector<AVal> outs;
    for (int o : e.out) outs.push_back(j_.avals[o]);
    return opaque(kind, list, e.prim, e.params, args, outs);
  }
  std::vector<EP> opaque(Step::Kind kind, std::vector<Op>& list, Prim prim, const Params& params, const std::vector<EP>& args,
                         const std::vector<AVal>& out_avals) {
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

  // A concatenate binding more buffers than the budget becomes a tree of concatenates of at
  // most budget-1 operands each.
  std::vector<EP> concatenate(const Eqn& e, std::vector<EP> level) {
    const int per = o_.max_buffers > 2 ? o_.max_buffers - 1 : 0;
    const auto ax = static_cast<std::size_t>(e.params.axis);
    while (per > 0 && static_cast<int>(level.size()) > per) {
      std::vector<EP> next;
      for (std::size_t i = 0; i < level.size(); i += static_cast<std::size_t>(per)) {
        std::vector<EP> chunk(level.begin() + static_cast<std::ptrdiff_t>(i),
                              level.begin() + static_cast<std::ptrdiff_t>(std::min(level.size(), i + static_cast<std::size_t>(per))));
        if (chunk.size() == 1) {
          next.push_back(chunk[0]);
          continue;
        }
        Shape sh = chunk[0]->shape;
        sh[ax] = 0;
        for (const EP& c : chunk) sh[ax] += c->shape[ax];
        next.push_back(opaque(Step::Kind::routine, p_.routines, Prim::concatenate, e.params, chunk, {AVal{chunk[0]->dtype, sh}})[0]);
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
          KLoad l{it->second, e->offset, std::vector<std::int64_t>(k.space.size(), 0)};
          for (std::size_t d = 0; d < dmap.size(); ++d) l.strides[dmap[d]] = e->strides[d];
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
    const int out = new_buffer(k.out);
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

  void insert_frees() {
    std::vector<int> last(p_.buffers.size(), -1);
    for (std::size_t i = 0; i < p_.steps.size(); ++i) {
      for (int b : p_.steps[i].in) last[b] = static_cast<int>(i);
      for (int b : p_.steps[i].out) last[b] = std::max(last[b], static_cast<int>(i));
    }
    std::set<int> outs(p_.outputs.begin(), p_.outputs.end());
    std::vector<Step> steps;
    for (std::size_t i = 0; i < p_.steps.size(); ++i) {
      steps.push_back(p_.steps[i]);
      Step fr{Step::Kind::free, -1, {}, {}};
      for (std::size_t b = p_.num_inputs; b < p_.buffers.size(); ++b)
        if (last[b] == static_cast<int>(i) && !outs.count(static_cast<int>(b))) fr.in.push_back(static_cast<int>(b));
      if (!fr.in.empty()) steps.push_back(std::move(fr));
    }
    p_.steps = std::move(steps);
  }

  const Jaxpr& j_;
  LowerOptions o_;
  Program p_;
};

}  // namespace

Program lower(const Jaxpr& j, const LowerOptions& o) { return Lowering(j, o).run(); }

}  // namespace jx
