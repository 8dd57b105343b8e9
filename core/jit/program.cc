#include "core/jit/program.h"

#include "core/base/env.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/instrument/instrument.h"
#include "core/jit/passes.h"
#include "core/jit/scan_leaves.h"
#include "core/transform/control_internal.h"

namespace jx {

LowerOptions lower_options(const Target& t) {
  LowerOptions o;
  o.max_buffers = t.budget;
  o.inline_multi_use = t.inline_multi_use;
  o.f64 = t.limits.float64;
  o.f32_sum_max_terms = t.limits.f32_sum_max_terms;
  o.scratch_reduction_min = t.limits.scratch_reduction_min;
  o.max_bindings = t.limits.max_buffers_per_kernel;
  if (t.limits.launch_bound) {  // fewer, bigger kernels: recompute rather than launch
    o.unroll_sums = true;
    // JX_UNROLL_NODES=<n>: another bound for unrolled sums (for measuring)
    o.unroll_nodes = static_cast<std::size_t>(env_int("JX_UNROLL_NODES", 384));
    // JX_RECOMPUTE_NODES=<n>: another bound (for measuring)
    o.recompute_nodes = static_cast<std::size_t>(env_int("JX_RECOMPUTE_NODES", 48));
    o.recompute_expensive = true;
    // JX_HOIST_TRANSCENDENTALS=0: recomputed per element (for measuring)
    o.hoist_transcendentals = !t.inline_multi_use && !env_is_zero("JX_HOIST_TRANSCENDENTALS");
  }
  return o;
}

std::shared_ptr<const CompiledProgram> compile(const Jaxpr& j, const Target& t) {
  return std::make_shared<const CompiledProgram>(lower(j, t), t);
}

CompiledProgram::CompiledProgram(Program p, const Target& t) : prog_(std::move(p)), target_(t), be_(*t.backend) {
  // by control (unchanged by take_leaf_kernels: a taken kernel's reads move to its scan)
  const std::vector<std::vector<bool>> unread = unread_results(prog_);
  // JX_SCAN_LEAF_KERNELS=0: every leaf a buffer (for measuring)
  if (t.limits.scan_leaf_kernels && !env_is_zero("JX_SCAN_LEAF_KERNELS")) take_leaf_kernels(unread);
  kexe_ = be_.prepare_kernels(prog_.kernels);
  if (t.limits.launch_bound && !env_is_zero("JX_KERNEL_GROUPS")) {
    groups_ = plan_kernel_groups(prog_, be_, stricter_limit(t.budget, t.limits.max_buffers_per_kernel));
    if (!groups_.empty()) group_at_.assign(prog_.steps.size(), -1);
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (int s : groups_[g].steps) group_at_[s] = static_cast<int>(g);
  }
  for (const Op& op : prog_.routines) rexe_.push_back(be_.prepare(op));
  for (std::size_t c = 0; c < prog_.controls.size(); ++c) {
    const Op& op = prog_.controls[c];
    if (auto it = leaf_plans_.find(static_cast<int>(c)); it != leaf_plans_.end()) {
      scans_.push_back(std::move(it->second));
    } else if (op.prim == Prim::associative_scan) {
      scans_.push_back(plan_associative_scan(op, unread[c]));
    } else if (op.prim == Prim::while_loop || op.prim == Prim::cond) {  // data-dependent control: the host decides
      ScanStep s;
      s.while_loop = true;
      s.plan.reason = op.prim == Prim::cond ? "a cond reads its index on the host" : "a while loop runs on the host";
      scans_.push_back(std::move(s));
    } else {
      scans_.push_back(plan_scan(op));
    }
  }
}

// A lax.scan: the backend's plan (require_path checked against it here, the one place), and the
// body compiled for a host loop where the plan has no executable.
CompiledProgram::ScanStep CompiledProgram::plan_scan(const Op& op) const {
  const PrimParams& p = op.params;
  Program body = lower(simplify(scan_body_jaxpr(p)), target_);
  ScanStep s;
  ScanProgram sp{body, p.num_consts, p.num_carry, p.length, p.reverse, op.in, op.out, nullptr};
  sp.series = series_of(op);
  s.plan = be_.plan_scan(sp, target_);
  require_scan_path(s.plan.path, be_.info().backend, scan_path_details(s.plan.path, p.length, s.plan.reason),
                    p.require_paths);
  if (!s.plan.exe) s.body = std::make_shared<const CompiledProgram>(std::move(body), target_);
  return s;
}

// A vmapped scan's or associative scan's body before batching, lowered, where the backend runs
// them per series. Its operands: consts | carries | xs (scan), consts | leaves (associative scan,
// whose combine takes consts | a leaves | b leaves).
std::shared_ptr<const SeriesBody> CompiledProgram::series_of(const Op& op) const {
  const PrimParams& p = op.params;
  const Jaxpr* j = unbatched_jaxpr(p);
  if (!target_.limits.series_scans || !j || p.batch_size < 2 || p.batched.size() > op.in.size()) return nullptr;
  const int n = static_cast<int>(p.batched.size()), k = static_cast<int>(op.out.size());
  const int nc =
      op.prim == Prim::scan ? n - p.num_carry - static_cast<int>(op.in.size() - p.num_consts - p.num_carry) : n - k;
  auto s = std::make_shared<SeriesBody>();
  s->body = lower(simplify(*j), target_);
  if (nc < 0 || s->body.num_inputs != (op.prim == Prim::scan ? n : nc + 2 * k)) return nullptr;
  s->first = static_cast<int>(op.in.size()) - n;
  s->size = p.batch_size;
  for (std::int64_t b : p.batched) s->batched.push_back(b != 0);
  s->num_consts = nc;
  return s;
}

// An associative scan: the backend's own routine (vulkan: blocked, cooperative or Kogge-Stone),
// else its decomposition as a sub-program: a sequential fold where the backend compiles loops
// (native), the odd/even recursion otherwise.
AssocProgram CompiledProgram::assoc_program(const Op& op) const {
  const PrimParams& p = op.params;
  return {lower(simplify(assoc_body_jaxpr(p)), target_), p.num_consts, p.axis, p.reverse, op.in, series_of(op), {}, {}};
}

CompiledProgram::ScanStep CompiledProgram::plan_associative_scan(const Op& op, std::vector<bool> unread) const {
  ScanStep s;
  s.associative = true;
  const PrimParams& p = op.params;
  AssocProgram ap = assoc_program(op);
  ap.unread = std::move(unread);
  s.plan = be_.plan_associative_scan(ap, target_);
  if (!s.plan.exe) {
    auto folded = compile(simplify(assoc_decomposition(p, op.in, true)), target_);
    if (folded->host_loop_reason().empty()) {
      s.body = folded;
      s.plan.reason += "; a sequential fold compiled as one loop";
    } else {
      s.body = compile(simplify(assoc_decomposition(p, op.in, false)), target_);
      s.plan.reason += "; the odd/even recursion";
    }
  }
  debug_log(1, fmt::format("associative_scan on {}: {}", be_.info().backend, s.plan.reason));
  return s;
}

// Each associative scan offered the kernels that compute its leaves for nothing else
// (scan_leaves.h); where the backend plans it with them, the program drops their steps.
void CompiledProgram::take_leaf_kernels(const std::vector<std::vector<bool>>& unread) {
  std::vector<std::pair<int, LeafOffer>> taken;
  for (auto& [step, o] : offer_leaf_kernels(prog_)) {
    const int c = prog_.steps[step].index;
    AssocProgram ap = assoc_program(prog_.controls[c]);
    ap.unread = unread[c];
    ap.leaf_kernels = o.leaves;
    for (int b : o.extra) ap.extra.push_back(prog_.buffers[b]);
    ScanStep s;
    s.associative = true;
    s.plan = be_.plan_associative_scan(ap, target_);
    if (!s.plan.exe) continue;
    debug_log(1, fmt::format("associative_scan on {}: {}", be_.info().backend, s.plan.reason));
    leaf_plans_.emplace(c, std::move(s));
    taken.emplace_back(step, std::move(o));
  }
  if (!taken.empty()) absorb_leaf_kernels(prog_, taken);
}

std::string CompiledProgram::host_loop_reason() const {
  for (const ScanStep& s : scans_)
    if (!s.plan.exe && !s.associative && !s.while_loop) return s.plan.reason;
  return "";
}

namespace {
// Which of a call's associative scans submit what is recorded so far, so that the device starts
// while the rest is recorded (JX_EARLY_SUBMIT): first (default), the call's first only; always
// (or 1), every one; 0, none. Each submit costs the device a gap between batches, and a later scan's
// batch mostly finds the device still busy (H200, m = 2, N = 102400: gradient 0.311 -> 0.291 ms,
// smoother 0.168 -> 0.146 against always; m = 4 to 16 unchanged). A rule on the device's state
// instead (submit where it has run everything before) was as fast, but made the submit count
// depend on timing, which the scenarios' bounds (constant in N) cannot take.
enum class EarlySubmit { never, first, always };
EarlySubmit early_submit() {
  static const EarlySubmit mode = [] {
    const char* e = std::getenv("JX_EARLY_SUBMIT");
    const std::string_view v = e ? e : "";
    if (v == "0") return EarlySubmit::never;
    if (v == "always" || v == "1") return EarlySubmit::always;
    if (!v.empty() && v != "first")
      throw Error(fmt::format("JX_EARLY_SUBMIT={}: expected first, always (or 1) or 0", v));
    return EarlySubmit::first;
  }();
  return mode;
}
// Host loops (scans run step by step) the calling thread is inside: their bodies' associative
// scans do not submit early. A step's scan is a small part of the loop's work, and a submit per
// scan per step costs more host time than the overlap saves (par_mle at m = 2 on the H200: 4116
// dispatches per fit, 202 submits with early submits, 64 without; 10.4-14.5 against 12.2-33.6 ms).
thread_local int host_loop_depth = 0;
struct HostLoopScope {
  HostLoopScope() { ++host_loop_depth; }
  ~HostLoopScope() { --host_loop_depth; }
  HostLoopScope(const HostLoopScope&) = delete;
  HostLoopScope& operator=(const HostLoopScope&) = delete;
};

}  // namespace

// One call of a program: the slot of every buffer, and which of them this call allocated (one
// reference each, released at the end unless handed out). Each step kind has its own function;
// run() walks the plan and picks them.
class CompiledProgram::Run {
 public:
  Run(const CompiledProgram& cp, const std::vector<Array>& inputs)
      : cp_(cp),
        p_(cp.prog_),
        be_(cp.be_),
        inputs_(inputs),
        slot_(p_.buffers.size(), 0),
        owned_(p_.buffers.size(), false) {
    if (static_cast<int>(inputs.size()) != p_.num_inputs)
      throw Error(fmt::format("program: expected {} inputs, got {}", p_.num_inputs, inputs.size()));
    for (int i = 0; i < p_.num_inputs; ++i) {
      if (&inputs[i].backend() != &be_)
        throw BackendError(fmt::format("jit: input {} lives on backend '{}', the program was compiled for '{}'", i,
                                       inputs[i].backend().info().backend, be_.info().backend));
      slot_[i] = inputs[i].slot();
    }
  }
  ~Run() {
    for (std::size_t b = 0; b < slot_.size(); ++b)
      if (owned_[b]) be_.decref(slot_[b]);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void step(const Step& st) {
    if (st.kind == Step::Kind::free) return release(st);
    if (st.kind != Step::Kind::control) return dispatch(st);
    const ScanStep& sc = cp_.scans_[st.index];
    if (sc.while_loop) {
      std::optional<HostLoopScope> in_loop;
      if (p_.controls[st.index].prim == Prim::while_loop) in_loop.emplace();
      return adopt(st, eval_bind(p_.controls[st.index].prim, arrays(st), p_.controls[st.index].params));
    }
    if (sc.associative && sc.plan.exe) return fused_associative_scan(st, *sc.plan.exe);
    if (sc.associative) return adopt(st, sc.body->run(arrays(st)));
    if (sc.plan.exe) return fused_scan(st, sc);
    const CompiledProgram& body = *sc.body;
    const HostLoopScope in_loop;
    adopt(st, scan_host_loop([&](const std::vector<Array>& a) { return body.run(a); }, p_.controls[st.index].params,
                             arrays(st), sc.plan.reason));
  }

  // The program's outputs: inputs as given, this call's buffers handed over (a buffer returned
  // twice gets a second reference).
  std::vector<Array> outputs() {
    std::vector<Array> res;
    for (int b : p_.outputs) {
      if (b < p_.num_inputs) {
        res.push_back(inputs_[b]);
      } else if (owned_[b]) {
        res.emplace_back(&be_, slot_[b], p_.buffers[b]);
        owned_[b] = false;
      } else {
        be_.incref(slot_[b]);
        res.emplace_back(&be_, slot_[b], p_.buffers[b]);
      }
    }
    return res;
  }

 private:
  void release(const Step& st) {
    for (int b : st.in) {
      be_.decref(slot_[b]);
      owned_[b] = false;
    }
  }
  // operands' slots into in_, fresh slots for the outputs into out_
  void bind_slots(const Step& st) { bind_slots(st.in, st.out); }
  void bind_slots(const std::vector<int>& in, const std::vector<int>& out) {
    in_.clear();
    out_.clear();
    for (int b : in) in_.push_back(slot_[b]);
    for (int b : out) {
      slot_[b] = be_.malloc(p_.buffers[b]);
      owned_[b] = true;
      out_.push_back(slot_[b]);
    }
  }
  // the operands as Arrays (each with its own reference), for steps the runtime runs
  std::vector<Array> arrays(const Step& st) {
    std::vector<Array> args;
    for (int b : st.in) {
      be_.incref(slot_[b]);
      args.emplace_back(&be_, slot_[b], p_.buffers[b]);
    }
    return args;
  }
  void adopt(const Step& st, const std::vector<Array>& res) {
    for (std::size_t k = 0; k < st.out.size(); ++k) {
      slot_[st.out[k]] = res[k].slot();
      be_.incref(slot_[st.out[k]]);
      owned_[st.out[k]] = true;
    }
  }
  void emit(const std::string& name, int buffers, bool kernel) {
    if (trace::has_subscribers())
      trace::emit({trace::EventKind::dispatch, be_.info().backend, name, buffers, kernel, 0.0, {}});
  }
  void fused_associative_scan(const Step& st, Executable& exe) {
    bind_slots(st);
    be_.dispatch(exe, in_, out_);
    emit("associative_scan", exe.bound_buffers(static_cast<int>(in_.size() + out_.size())), true);
    // the call's first scan is most of its device work: what is recorded so far starts while the
    // rest is recorded (early_submit: later scans wait for the call's one submit; none inside a
    // host loop, where each step's scan is a small part of the work)
    if (host_loop_depth > 0 || early_submit() == EarlySubmit::never) return;
    if (early_submit() == EarlySubmit::first && submitted_early_) return;
    be_.flush();
    submitted_early_ = true;
  }
  void fused_scan(const Step& st, const ScanStep& sc) {
    const PrimParams& sp = p_.controls[st.index].params;
    Executable& exe = *sc.plan.exe;
    report_scan_path(sc.plan.path, be_.info().backend, scan_path_details(sc.plan.path, sp.length, sc.plan.reason));
    bind_slots(st);
    be_.dispatch(exe, in_, out_);
    emit("scan", exe.bound_buffers(static_cast<int>(in_.size() + out_.size())), true);
  }

 public:
  // A group's kernels, dispatched at its first step (later members' steps do nothing): their
  // inputs are all computed by then, and the frees between members free none of them.
  void group(const KernelGroup& g) {
    bind_slots(g.in, g.out);
    be_.dispatch(*g.exe, in_, out_);
    emit(g.name, static_cast<int>(in_.size() + out_.size()), true);
  }

 private:
  void dispatch(const Step& st) {
    bind_slots(st);
    const bool kernel = st.kind == Step::Kind::kernel;
    be_.dispatch(kernel ? *cp_.kexe_[st.index] : *cp_.rexe_[st.index], in_, out_);
    emit(kernel ? p_.kernels[st.index].name : std::string(prim_name(p_.routines[st.index].prim)),
         static_cast<int>(in_.size() + out_.size()), kernel);
  }

  const CompiledProgram& cp_;
  const Program& p_;
  Backend& be_;
  const std::vector<Array>& inputs_;
  std::vector<SlotId> slot_;
  std::vector<bool> owned_;
  bool submitted_early_ = false;  // this call's first associative scan submitted
  std::vector<SlotId> in_, out_;  // the current step's slots
};

std::vector<Array> CompiledProgram::run(const std::vector<Array>& inputs) const {
  Run r(*this, inputs);
  for (std::size_t s = 0; s < prog_.steps.size(); ++s) {
    const int g = group_at_.empty() ? -1 : group_at_[s];
    if (g < 0) {
      r.step(prog_.steps[s]);
    } else if (groups_[g].steps.front() == static_cast<int>(s)) {
      r.group(groups_[g]);
    }
  }
  return r.outputs();
}

}  // namespace jx
