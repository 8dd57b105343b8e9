#include "core/jit/scan_leaves.h"

#include <algorithm>
#include <map>

#include "core/jit/program.h"

namespace jx {
namespace {

// Reads of every buffer: by steps other than frees (each occurrence) and as a program output.
std::vector<int> readers_of(const Program& p) {
  std::vector<int> r(p.buffers.size(), 0);
  for (const Step& st : p.steps)
    if (st.kind != Step::Kind::free)
      for (int b : st.in) ++r[b];
  for (int b : p.outputs) ++r[b];
  return r;
}

// The leaves of the associative scan at step `step` that kernels compute for it alone.
LeafOffer offer(const Program& p, int step, const std::vector<int>& readers, const std::vector<int>& producer) {
  LeafOffer o;
  const Step& st = p.steps[step];
  const Op& op = p.controls[st.index];
  const int nc = op.params.num_consts, k = static_cast<int>(op.out.size());
  if (static_cast<int>(st.in.size()) != nc + k) return o;
  for (int l = 0; l < k; ++l) {
    const int b = st.in[nc + l], at = producer[b];
    if (b < p.num_inputs || at < 0 || readers[b] != 1) continue;
    const Kernel& kk = p.kernels[p.steps[at].index];
    if (kk.is_reduction() || kk.space != kk.out.shape) continue;
    LeafKernel lk{l, kk, {}};
    for (int in : p.steps[at].in) {
      auto it = std::find(o.extra.begin(), o.extra.end(), in);
      lk.inputs.push_back(static_cast<int>(it - o.extra.begin()));
      if (it == o.extra.end()) o.extra.push_back(in);
    }
    o.leaves.push_back(std::move(lk));
    o.producers.push_back(at);
  }
  return o;
}

}  // namespace

std::vector<std::pair<int, LeafOffer>> offer_leaf_kernels(const Program& p) {
  const std::vector<int> readers = readers_of(p);
  std::vector<int> producer(p.buffers.size(), -1);
  for (std::size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == Step::Kind::kernel && p.steps[i].out.size() == 1)
      producer[p.steps[i].out[0]] = static_cast<int>(i);
  std::vector<std::pair<int, LeafOffer>> offers;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const Step& st = p.steps[i];
    if (st.kind != Step::Kind::control || p.controls[st.index].prim != Prim::associative_scan) continue;
    LeafOffer o = offer(p, static_cast<int>(i), readers, producer);
    if (!o.empty()) offers.emplace_back(static_cast<int>(i), std::move(o));
  }
  return offers;
}

std::vector<std::vector<bool>> unread_results(const Program& p) {
  const std::vector<int> readers = readers_of(p);
  std::vector<std::vector<bool>> r(p.controls.size());
  for (const Step& st : p.steps)
    if (st.kind == Step::Kind::control)
      for (int b : st.out) r[st.index].push_back(readers[b] == 0);
  return r;
}

void absorb_leaf_kernels(Program& p, const std::vector<std::pair<int, LeafOffer>>& taken) {
  std::vector<bool> gone(p.steps.size(), false);
  for (auto& [step, o] : taken) {
    Step& st = p.steps[step];
    const int nc = p.controls[st.index].params.num_consts;
    std::vector<int> in(st.in.begin(), st.in.begin() + nc);
    for (std::size_t l = 0; l + nc < st.in.size(); ++l)
      if (std::none_of(o.leaves.begin(), o.leaves.end(),
                       [&](const LeafKernel& lk) { return lk.leaf == static_cast<int>(l); }))
        in.push_back(st.in[nc + l]);
    in.insert(in.end(), o.extra.begin(), o.extra.end());
    st.in = std::move(in);
    for (int at : o.producers) gone[at] = true;
  }
  // the kernels that stay, renumbered in order; the steps that stay, frees dropped (placed again)
  std::vector<int> renumber(p.kernels.size(), -1);
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    Step st = p.steps[i];
    if (gone[i] || st.kind == Step::Kind::free) continue;
    if (st.kind == Step::Kind::kernel) {
      if (renumber[st.index] < 0) {
        renumber[st.index] = static_cast<int>(kernels.size());
        kernels.push_back(p.kernels[st.index]);
      }
      st.index = renumber[st.index];
    }
    steps.push_back(std::move(st));
  }
  p.kernels = std::move(kernels);
  p.steps = std::move(steps);
  insert_frees(p);
}

}  // namespace jx
