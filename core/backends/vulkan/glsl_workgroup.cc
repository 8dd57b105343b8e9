#include "core/backends/vulkan/glsl_workgroup.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>

#include "core/backends/vulkan/glsl_linalg.h"
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_words.h"

namespace jx::vk {

std::string read_loc(const Loc& l, int buffer, const std::string& i) {
  const std::string at = l.shift.empty() ? i : fmt::format("{} + ({})", l.shift, i);
  switch (l.home) {
    case Home::global_in: return gread("gin", l.aval.dtype, l.base, at);
    case Home::global_x:
      return gread("gin", l.aval.dtype, l.base, fmt::format("t * {} + ({})", l.row ? l.row : l.aval.size(), at));
    case Home::shared: return sread(l.aval.dtype, std::to_string(l.base), i);
    case Home::reg: return fmt::format("r{}", buffer);
    case Home::local: return fmt::format("L{}[{}]", buffer, i);
    case Home::global_out: return gread("gout", l.aval.dtype, l.base, i);
    case Home::scratch: return sread(l.aval.dtype, std::to_string(l.base), i, "sc");
  }
  return "0";
}

std::string write_loc(const Loc& l, int buffer, const std::string& i, const std::string& v) {
  if (l.home == Home::local) return fmt::format("L{}[{}] = {};\n", buffer, i, v);
  if (l.home == Home::global_out) return gwrite(l.aval.dtype, l.base, i, v);
  if (l.home == Home::scratch) return swrite(l.aval.dtype, std::to_string(l.base), i, v, "sc");
  return swrite(l.aval.dtype, std::to_string(l.base), i, v);
}

std::string strided_loop(std::int64_t n, const std::string& body, bool single, std::int64_t wg, std::int64_t lane0) {
  if (n == 0) return "";
  if (single) {  // unrolled: constant indices, and no loop for llvmpipe's limiter to count
    std::string u;
    for (std::int64_t e = 0; e < n; ++e) u += fmt::format("{{\nconst int e = {};\n{}}}\n", e, body);
    return u;
  }
  if (lane0 > 0 && lane0 + n <= wg)
    return fmt::format("if (lid >= {0} && lid < {1}) {{\nconst int e = lid - {0};\n{2}}}\n", lane0, lane0 + n, body);
  if (n <= wg) return fmt::format("if (lid < {}) {{\nconst int e = lid;\n{}}}\n", n, body);
  return fmt::format("for (int e = lid; e < {}; e += {}) {{\n{}}}\n", n, wg, body);
}

std::int64_t loop_iterations(std::int64_t n, bool single, std::int64_t wg) {
  if (single) return 0;
  return n <= wg ? 0 : (n + wg - 1) / wg;
}

namespace {

// The invocations a step needs when it runs in one pass without barriers of its own (so that it
// can share the workgroup with the other steps between two barriers); 0 when it needs them all.
std::int64_t step_lanes(const Program& b, const Step& st, const std::vector<Loc>& loc, bool single, std::int64_t wg) {
  if (single) return 0;
  std::int64_t n = loc[st.out[0]].aval.size();
  if (st.kind == Step::Kind::routine) {
    const Op& op = b.routines[st.index];
    if (op.prim != Prim::triangular_solve && is_linalg(op.prim)) return 0;  // barriers of its own
    if (op.prim == Prim::triangular_solve) n = linalg_matrices(op) * rhs_columns(op);
  }
  return n > 0 && n <= wg ? n : 0;
}

// One step's code, strided over the workgroup from invocation lane0 (a step that fits in the
// invocations from lane0 on; else from 0); adds the loop iterations it costs to `it`.
std::string step_code(const Program& b, const Step& st, const std::vector<Loc>& loc, bool single, std::int64_t wg,
                      std::int64_t lane0, const std::string& barrier, bool f64_math, Shader& sh, std::int64_t& it,
                      const std::string& perm = "") {
  auto strided = [&](std::int64_t m, const std::string& body) { return strided_loop(m, body, single, wg, lane0); };
  auto strided_iterations = [&](std::int64_t m) { return loop_iterations(m, single, wg); };
  const Loc& lo = loc[st.out[0]];
  auto load = [&](int in, const std::string& off) { return read_loc(loc[st.in[in]], st.in[in], off); };
  auto store = [&](const std::string& v) { return write_loc(lo, st.out[0], "e", v); };
  const std::int64_t m = lo.aval.size();
  if (st.kind == Step::Kind::kernel) {
    const Kernel& k = b.kernels[st.index];
    it += strided_iterations(m) + std::max<std::int64_t>(1, strided_iterations(m)) * reduce_iterations(k);
    return "{\n" + strided(m, kernel_element_code(KernelCtx{k, f64_math, load}, "e", sh, store)) + "}\n";
  }
  const Op& op = b.routines[st.index];
  if (is_linalg(op.prim)) {
    auto store_at = [&](int o, const std::string& off, const std::string& v) {
      return write_loc(loc[st.out[o]], st.out[o], off, v);
    };
    auto load_out = [&](int o, const std::string& off) { return read_loc(loc[st.out[o]], st.out[o], off); };
    const std::int64_t mats = linalg_matrices(op);
    // fewer matrices than invocations: the workgroup works on each together (right-hand sides,
    // elimination rows in parallel), else an invocation per matrix
    if (!single && (op.prim == Prim::triangular_solve || mats < wg))
      return linalg_workgroup_code(op, wg, lane0, barrier, f64_math, sh, load, load_out, store_at, it, perm);
    it += strided_iterations(mats) + std::max<std::int64_t>(1, strided_iterations(mats)) * linalg_iterations(op);
    return "{\n" + strided(mats, linalg_matrix_code(op, "e", f64_math, sh, load, load_out, store_at)) + "}\n";
  }
  const bool arg = op.prim == Prim::argmax || op.prim == Prim::argmin;
  it += strided_iterations(m) +
        (arg ? std::max<std::int64_t>(1, strided_iterations(m)) * op.in[0].shape[op.params.axis] : 0);
  return "{\n" + strided(m, routine_element_code(op, "e", sh, load, store)) + "}\n";
}

// A triangular solve chained onto the solve before it: it reads that solve's result as its
// right-hand sides, with the same matrices, sides and columns, so each invocation solves the same
// (matrix, column) in both and reads back only its own writes. Both run between the same two
// barriers, on the same invocations (L then U of the cooperative combine's inverse: one barrier
// fewer).
bool column_chained(const Program& b, const Step& prev, const Step& st, bool single) {
  static const bool on = !env_is_zero("JX_VK_CHAIN_SOLVES");  // 0: a barrier between them, for measuring
  auto solve = [&](const Step& x) {
    return x.kind == Step::Kind::routine && b.routines[x.index].prim == Prim::triangular_solve;
  };
  if (!on || single || !solve(prev) || !solve(st) || st.in.size() < 2 || st.in[1] != prev.out[0]) return false;
  const Op &p = b.routines[prev.index], &o = b.routines[st.index];
  return p.params.left_side == o.params.left_side && p.in[0].shape == o.in[0].shape && p.in[1].shape == o.in[1].shape &&
         p.in[1].dtype == o.in[1].dtype && st.in[0] != prev.out[0];
}

// lu steps of single matrices that can be factored together (same size and type).
bool together_lu(const Program& b, const Step& st, bool single) {
  return !single && st.kind == Step::Kind::routine && b.routines[st.index].prim == Prim::lu &&
         linalg_matrices(b.routines[st.index]) == 1;
}
bool together_with(const Program& b, const Step& x, const Step& y, bool single) {
  if (!together_lu(b, x, single) || !together_lu(b, y, single)) return false;
  const AVal &p = b.routines[x.index].in[0], &q = b.routines[y.index].in[0];
  return p.shape.back() == q.shape.back() && p.dtype == q.dtype;
}

// A kernel that only swaps the last two axes of its one input (of one square matrix): y[i][j] = x[j][i].
bool transposes_matrix(const Kernel& k) {
  const std::size_t d = k.space.size();
  if (k.is_reduction() || k.inputs.size() != 1 || k.epilogue >= 0 || d < 2 || k.nodes[k.body].kind != KNodeKind::load)
    return false;
  const KLoad& l = k.loads[k.nodes[k.body].load];
  const std::int64_t n = k.space[d - 1];
  bool ok = !l.indexed && !l.clamp && l.offset == 0 && k.out.dtype == k.inputs[0].dtype &&
            k.inputs[0].shape == k.out.shape && k.space[d - 2] == n && l.strides[d - 1] == n && l.strides[d - 2] == 1;
  for (std::size_t i = 0; i + 2 < d; ++i) ok = ok && k.space[i] == 1;
  return ok;
}

// np.linalg.inv's permutation folded into its solves (linalg_workgroup_code's `perm`): a lu of one
// matrix whose P is read only by a kernel transposing it, read in turn only as the right-hand sides
// of unit-lower solves of one matrix (neither a result of the program). The lu keeps its pivots in
// registers (`pf<P>_`), the transpose is not run, and the solves follow the lu's own last barrier:
// two barriers and two passes over the workgroup fewer per inverse.
struct PermFolds {
  std::map<const Step*, std::string> lu, solves;  // the array each folded lu writes, each solve reads
  std::set<const Step*> skipped;                  // the transposes
};

PermFolds perm_candidates(const Program& b, bool single) {
  PermFolds f;
  // JX_VK_FOLD_PERM=0: P and its transpose written (read at each render: tests compare both)
  if (single || env_is_zero("JX_VK_FOLD_PERM")) return f;
  std::map<int, std::vector<const Step*>> readers;
  for (const Step& st : b.steps)
    if (st.kind != Step::Kind::free)
      for (int i : st.in) readers[i].push_back(&st);
  const std::set<int> results(b.outputs.begin(), b.outputs.end());
  auto only_reader = [&](int buf) -> const Step* {
    const auto& r = readers[buf];
    return !results.count(buf) && r.size() == 1 && std::count(r[0]->in.begin(), r[0]->in.end(), buf) == 1 ? r[0]
                                                                                                          : nullptr;
  };
  auto unit_lower_rhs = [&](const Step* st, int buf) {
    if (st->kind != Step::Kind::routine || st->in.size() != 2 || st->in[1] != buf || st->in[0] == buf) return false;
    const Op& op = b.routines[st->index];
    const PrimParams& p = op.params;
    return op.prim == Prim::triangular_solve && p.left_side && p.lower && !p.transpose_a && p.unit_diagonal &&
           linalg_matrices(op) == 1;
  };
  for (const Step& st : b.steps) {
    if (!together_lu(b, st, single) || st.out.size() < 3) continue;
    const Step* t = only_reader(st.out[1]);
    if (!t || t->kind != Step::Kind::kernel || !transposes_matrix(b.kernels[t->index]) || t->out.size() != 1 ||
        results.count(t->out[0]) || readers[t->out[0]].empty())
      continue;
    bool ok = true;
    for (const Step* r : readers[t->out[0]]) ok = ok && unit_lower_rhs(r, t->out[0]);
    if (!ok) continue;
    const std::string name = fmt::format("pf{}_", st.out[1]);
    f.lu[&st] = name;
    f.skipped.insert(t);
    for (const Step* r : readers[t->out[0]]) f.solves[r] = name;
  }
  return f;
}

LinalgIo step_io(const Program& b, const Step& st, const std::vector<Loc>& loc) {
  return LinalgIo{b.routines[st.index],
                  [&st, &loc](int in, const std::string& off) { return read_loc(loc[st.in[in]], st.in[in], off); },
                  [&st, &loc](int o, const std::string& off) { return read_loc(loc[st.out[o]], st.out[o], off); },
                  [&st, &loc](int o, const std::string& off, const std::string& v) {
                    return write_loc(loc[st.out[o]], st.out[o], off, v);
                  }};
}

// The steps between two barriers (independent of each other): lu steps of one size factored at
// once; steps without barriers of their own side by side on disjoint invocations, from a warp
// boundary (32) where they fit.
std::string region_code(const Program& b, const std::vector<const Step*>& steps, const std::vector<Loc>& loc,
                        bool single, std::int64_t wg, const std::string& barrier, bool f64_math, Shader& sh,
                        std::int64_t& it, const PermFolds& folds) {
  auto perm = [&](const Step& st) {
    auto l = folds.lu.find(&st);
    if (l != folds.lu.end()) return l->second;
    auto s = folds.solves.find(&st);
    return s != folds.solves.end() ? s->second : std::string();
  };
  std::string code;
  std::vector<bool> done(steps.size());
  std::int64_t lane = 0, last0 = 0;  // invocations taken so far; where the last step started
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (done[i]) continue;
    const Step& st = *steps[i];
    if (i > 0 && column_chained(b, *steps[i - 1], st, single)) {  // on the solve's own invocations
      code += step_code(b, st, loc, single, wg, last0, barrier, f64_math, sh, it, perm(st));
      continue;
    }
    if (together_lu(b, st, single) && !folds.lu.count(&st)) {
      std::vector<LinalgIo> jobs{step_io(b, st, loc)};
      for (std::size_t j = i + 1; j < steps.size() && static_cast<std::int64_t>(jobs.size()) < wg / 32; ++j) {
        const Step& o = *steps[j];
        if (done[j] || folds.lu.count(&o) || !together_with(b, st, o, single)) continue;
        jobs.push_back(step_io(b, o, loc));
        done[j] = true;
      }
      if (jobs.size() > 1) {
        code += lu_workgroup_code(jobs, wg, barrier, f64_math, sh, it);
        lane = wg;
        continue;
      }
    }
    const std::int64_t lanes = step_lanes(b, st, loc, single, wg);
    std::int64_t lane0 = (lane + 31) / 32 * 32;
    if (lanes == 0 || lane0 + lanes > wg) lane0 = lanes && lane + lanes <= wg ? lane : 0;
    lane = lanes ? lane0 + lanes : wg;
    last0 = lane0;
    code += step_code(b, st, loc, single, wg, lane0, barrier, f64_math, sh, it, perm(st));
  }
  return code;
}

// Regions: a step that reads or writes what an earlier step of the region writes, or writes what
// it reads, starts a new one after a barrier (but a solve chained onto the one before it); a
// folded lu ends its region with its own barrier (only its det is written after it).
struct Region {
  std::vector<const Step*> steps;
  bool barrier = true;  // before it (the first region has none)
};
std::vector<Region> split_regions(const Program& b, bool single, const PermFolds& folds) {
  std::vector<Region> regions(1);
  std::set<int> written, read;  // buffers since the last barrier
  for (const Step& st : b.steps) {
    if (st.kind == Step::Kind::free || folds.skipped.count(&st)) continue;
    Region& cur = regions.back();
    bool need = false;
    const bool chained = !cur.steps.empty() && column_chained(b, *cur.steps.back(), st, single);
    for (int o : st.out) need = need || written.count(o) || read.count(o);
    for (std::size_t i = 0; i < st.in.size(); ++i) need = need || (written.count(st.in[i]) && !(chained && i == 1));
    if (need) {
      if (cur.steps.empty())
        cur.barrier = true;
      else
        regions.emplace_back();
      written.clear();
      read.clear();
    }
    for (int i : st.in) read.insert(i);
    written.insert(st.out.begin(), st.out.end());
    regions.back().steps.push_back(&st);
    if (folds.lu.count(&st)) {
      regions.push_back(Region{{}, false});
      written = {st.out[2]};
      read.clear();
    }
  }
  return regions;
}

// The candidates whose lu is factored alone (not together with another lu of its region).
PermFolds perm_folds(const Program& b, bool single) {
  PermFolds f = perm_candidates(b, single);
  if (f.lu.empty()) return f;
  for (const Region& r : split_regions(b, single, PermFolds{})) {
    for (const Step* st : r.steps) {
      auto l = f.lu.find(st);
      if (l == f.lu.end()) continue;
      bool alone = true;
      for (const Step* o : r.steps) alone = alone && (o == st || !together_with(b, *st, *o, single));
      if (alone) continue;
      for (auto s = f.solves.begin(); s != f.solves.end();)
        s = s->second == l->second ? f.solves.erase(s) : std::next(s);
      std::erase_if(f.skipped, [&](const Step* t) { return !t->in.empty() && t->in[0] == st->out[1]; });
      f.lu.erase(l);
    }
  }
  return f;
}

}  // namespace

std::vector<int> step_epochs(const Program& b, bool single) {
  std::vector<int> epoch(b.steps.size(), -1);
  int e = 0;
  bool first = true;
  for (const Region& r : split_regions(b, single, perm_folds(b, single))) {
    if (r.steps.empty()) continue;
    if (!first && r.barrier) ++e;
    first = false;
    for (const Step* st : r.steps) epoch[static_cast<std::size_t>(st - b.steps.data())] = e;
  }
  return epoch;
}

std::int64_t together_lu_entries(const Program& b) {
  const PermFolds folds = perm_folds(b, false);
  std::int64_t most = 0;
  for (const Region& r : split_regions(b, false, folds)) {
    std::map<std::int64_t, std::int64_t> count;  // lus factored together in the region, by size
    for (const Step* st : r.steps)
      if (together_lu(b, *st, false) && !folds.lu.count(st)) ++count[b.routines[st->index].in[0].shape.back()];
    for (const auto& [n, c] : count)
      if (c > 1) most = std::max(most, c * n * n);
  }
  return most;
}

WorkgroupSteps workgroup_steps(const Program& b, const std::vector<Loc>& loc, bool single, std::int64_t wg,
                               const std::string& barrier, bool f64_math, Shader& sh) {
  const PermFolds folds = perm_folds(b, single);
  WorkgroupSteps out;
  for (const auto& [lu, name] : folds.lu)
    out.code += fmt::format("int {}[{}];\n", name, b.routines[lu->index].in[0].shape.back());
  bool first = true;
  for (const Region& r : split_regions(b, single, folds)) {
    if (r.steps.empty()) continue;
    if (!first && r.barrier) out.code += barrier, ++out.barriers;
    first = false;
    out.code += region_code(b, r.steps, loc, single, wg, barrier, f64_math, sh, out.iterations, folds);
  }
  return out;
}

}  // namespace jx::vk
