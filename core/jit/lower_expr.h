#pragma once
// The lowering's symbolic values: an expression tree per jaxpr variable over its logical index
// (loads through views, constants, iotas, elementwise ops, at most one pending reduction), and
// the view rewrites movement primitives apply to it (lower_views.cc).
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/kernel/kernel.h"

namespace jx::lower_detail {

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
  bool clamp = false;     // load: may fall outside its buffer where a select discards it
  bool indexed = false;   // load: the element index is args[0] (int32), not offset + strides
  double value = 0.0;     // constant
  int dim = 0;            // iota
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

inline EP make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

inline EP load_of(int buffer, const AVal& a) {
  return make({Expr::K::load, a.dtype, a.shape, buffer, 0, row_major_strides(a.shape)});
}
inline EP constant(double v, DType d, Shape s) {
  Expr e{Expr::K::constant, d, std::move(s)};
  e.value = v;
  return make(std::move(e));
}
inline EP alu(Prim p, DType d, Shape s, std::vector<EP> args) {
  Expr e{Expr::K::alu, d, std::move(s)};
  e.prim = p;
  e.args = std::move(args);
  return make(std::move(e));
}

inline bool is_full_buffer(const Expr& e, const std::vector<AVal>& buffers) {
  return e.k == Expr::K::load && !e.indexed && e.offset == 0 && buffers[e.buffer].shape == e.shape &&
         e.strides == row_major_strides(e.shape);
}

inline void collect(const EP& e, std::set<int>& bufs, std::set<const Pending*>& reds, std::set<const Expr*>& seen) {
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
inline Footprint footprint(const std::vector<EP>& es) {
  Footprint f;
  std::set<const Expr*> seen;
  for (const EP& e : es) collect(e, f.bufs, f.reds, seen);
  return f;
}

// Visits every distinct node of a tree once (shared subtrees once, pending reductions' bodies
// included) until f returns false; returns the nodes visited.
template <class F>
std::size_t visit_nodes(const EP& e, F f) {
  std::set<const Expr*> seen;
  std::vector<const Expr*> stack{e.get()};
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (!f(*x)) break;
    for (const EP& a : x->args) stack.push_back(a.get());
    if (x->k == Expr::K::reduce) stack.push_back(x->red->body.get());
  }
  return seen.size();
}
// What a kernel built from the tree evaluates.
inline std::size_t dag_size(const EP& e) {
  return visit_nodes(e, [](const Expr&) { return true; });
}

// Rewrites memoized by node; `keep` holds temporaries whose addresses are keys (a freed
// node's address could be reused by a new one and hit a stale entry).
struct Memo : std::map<const Expr*, EP> {
  std::vector<EP> keep;
};

// ---- view rewrites (lower_views.cc; nullptr: not expressible, the caller materializes) ----

EP index_of(const Shape& s, std::int64_t dim);  // the int32 index along dim of shape s
// New dim dmap[d] takes old dim d; other new dims broadcast.
EP remap(const EP& e, const Shape& ns, const std::vector<std::int64_t>& dmap, Memo& memo);
// x[start + step·i] per axis (rev: start = n-1, step = -1).
EP restride(const EP& e, const Shape& ns, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step,
            Memo& memo);
// The same elements in row-major order under shape ns.
EP reshape_e(const EP& e, const Shape& ns, Memo& memo);
// The same tree with every load marked as clamped (see KLoad::clamp).
EP clamped(const EP& e, Memo& memo);

}  // namespace jx::lower_detail
