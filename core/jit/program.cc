#include "core/jit/program.h"

#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/instrument/instrument.h"
#include "core/ir/passes.h"
#include "core/lax/control.h"

namespace jx {

LowerOptions lower_options(const Backend& be, int budget) {
  LowerOptions o;
  o.max_buffers = budget;
  o.f64 = be.info().limits.float64;
  o.scratch_reduction_min = be.info().limits.scratch_reduction_min;
  if (be.info().limits.launch_bound) {  // fewer, bigger kernels: recompute rather than launch
    o.unroll_sums = true;
    o.recompute_nodes = 48;
    o.recompute_expensive = true;
  }
  return o;
}

CompiledProgram::CompiledProgram(Program p, Backend& be, int budget) : prog_(std::move(p)), be_(be), budget_(budget) {
  kexe_ = be_.prepare_kernels(prog_.kernels);
  for (const Op& op : prog_.routines) rexe_.push_back(be_.prepare(op));
  for (const Op& op : prog_.controls) {
    if (op.prim == Prim::associative_scan) {
      scans_.push_back(prepare_associative_scan(op, budget));
      continue;
    }
    if (op.prim == Prim::while_loop || op.prim == Prim::cond) {  // data-dependent control: the host decides
      ScanStep s;
      s.while_loop = true;
      s.why = op.prim == Prim::cond ? "a cond reads its index on the host" : "a while loop runs on the host";
      scans_.push_back(std::move(s));
      continue;
    }
    Program body = lower(simplify(scan_body_jaxpr(op.params)), lower_options(be_, budget));
    ScanStep s;
    ScanProgram sp{body, op.params.num_consts, op.params.num_carry, op.params.length, op.params.reverse, op.in, op.out};
    s.fused = be_.prepare_scan(sp, s.why);
    if (!s.fused) s.body = std::make_shared<const CompiledProgram>(std::move(body), be, budget);
    scans_.push_back(std::move(s));
  }
}

// An associative scan: the backend's own routine (vulkan: Kogge-Stone rounds), else its
// decomposition as a sub-program: a sequential fold where the backend compiles loops (native),
// the odd/even recursion otherwise.
CompiledProgram::ScanStep CompiledProgram::prepare_associative_scan(const Op& op, int budget) const {
  ScanStep s;
  s.associative = true;
  const Params& p = op.params;
  AssocProgram ap{lower(simplify(assoc_body_jaxpr(p)), lower_options(be_, budget)), p.num_consts, p.axis, p.reverse,
                  op.in};
  s.fused = be_.prepare_associative_scan(ap, s.why);
  if (s.fused) {
    debug_log(1, fmt::format("associative_scan on {}: {}", be_.info().backend, s.why));
    return s;
  }
  auto folded = std::make_shared<const CompiledProgram>(
      lower(simplify(assoc_decomposition(p, op.in, true)), lower_options(be_, budget)), be_, budget);
  if (folded->host_loop_reason().empty()) {
    s.body = folded;
    s.why += "; a sequential fold compiled as one loop";
  } else {
    s.body = std::make_shared<const CompiledProgram>(
        lower(simplify(assoc_decomposition(p, op.in, false)), lower_options(be_, budget)), be_, budget);
    s.why += "; the odd/even recursion";
  }
  debug_log(1, fmt::format("associative_scan on {}: {}", be_.info().backend, s.why));
  return s;
}

std::string CompiledProgram::host_loop_reason() const {
  for (const ScanStep& s : scans_)
    if (!s.fused && !s.associative && !s.while_loop) return s.why;
  return "";
}

namespace {
bool early_submit() {
  static const bool on = [] {
    const char* e = std::getenv("JX_EARLY_SUBMIT");
    return !e || std::string(e) != "0";
  }();
  return on;
}
}  // namespace

std::vector<Array> CompiledProgram::run(const std::vector<Array>& inputs) const {
  const Program& p = prog_;
  if (static_cast<int>(inputs.size()) != p.num_inputs)
    throw Error(fmt::format("program: expected {} inputs, got {}", p.num_inputs, inputs.size()));
  // owned[b]: a slot this run allocated (one reference), released unless handed out
  std::vector<SlotId> slot(p.buffers.size(), 0);
  std::vector<bool> owned(p.buffers.size(), false);
  struct Guard {
    Backend& be;
    std::vector<SlotId>& slot;
    std::vector<bool>& owned;
    ~Guard() {
      for (std::size_t b = 0; b < slot.size(); ++b)
        if (owned[b]) be.decref(slot[b]);
    }
  } guard{be_, slot, owned};
  for (int i = 0; i < p.num_inputs; ++i) {
    if (&inputs[i].backend() != &be_)
      throw BackendError(fmt::format("jit: input {} lives on backend '{}', the program was compiled for '{}'", i,
                                     inputs[i].backend().info().backend, be_.info().backend));
    slot[i] = inputs[i].slot();
  }
  const bool tracing = trace::has_subscribers();
  std::vector<SlotId> in, out;
  auto bind_slots = [&](const Step& st) {  // operands' slots, fresh slots for the outputs
    in.clear();
    out.clear();
    for (int b : st.in) in.push_back(slot[b]);
    for (int b : st.out) {
      slot[b] = be_.malloc(p.buffers[b]);
      owned[b] = true;
      out.push_back(slot[b]);
    }
  };
  for (const Step& st : p.steps) {
    if (st.kind == Step::Kind::free) {
      for (int b : st.in) {
        be_.decref(slot[b]);
        owned[b] = false;
      }
      continue;
    }
    if (st.kind == Step::Kind::control && scans_[st.index].while_loop) {
      std::vector<Array> args;
      for (int b : st.in) {
        be_.incref(slot[b]);
        args.emplace_back(&be_, slot[b], p.buffers[b]);
      }
      auto res = eval_bind(p.controls[st.index].prim, args, p.controls[st.index].params);
      for (std::size_t k = 0; k < st.out.size(); ++k) {
        slot[st.out[k]] = res[k].slot();
        be_.incref(slot[st.out[k]]);
        owned[st.out[k]] = true;
      }
      continue;
    }
    if (st.kind == Step::Kind::control && scans_[st.index].associative) {
      if (scans_[st.index].fused) {
        bind_slots(st);
        be_.dispatch(*scans_[st.index].fused, in, out);
        if (tracing)
          trace::emit({trace::EventKind::dispatch,
                       be_.info().backend,
                       "associative_scan",
                       scans_[st.index].fused->bound_buffers(static_cast<int>(in.size() + out.size())),
                       true,
                       0.0,
                       {}});
        // the scan is most of a call's device work: it starts while the rest is recorded
        if (early_submit()) be_.flush();
        continue;
      }
      std::vector<Array> args;
      for (int b : st.in) {
        be_.incref(slot[b]);
        args.emplace_back(&be_, slot[b], p.buffers[b]);
      }
      auto res = scans_[st.index].body->run(args);
      for (std::size_t k = 0; k < st.out.size(); ++k) {
        slot[st.out[k]] = res[k].slot();
        be_.incref(slot[st.out[k]]);
        owned[st.out[k]] = true;
      }
      continue;
    }
    if (st.kind == Step::Kind::control && scans_[st.index].fused) {
      const Params& sp = p.controls[st.index].params;
      const Executable& exe = *scans_[st.index].fused;
      if (exe.preencoded())
        report_scan_path(ScanPath::preencoded, be_.info().backend,
                         fmt::format("{} steps recorded into one submission: {}", sp.length, scans_[st.index].why),
                         sp.require_paths);
      else
        report_scan_path(ScanPath::fused, be_.info().backend,
                         fmt::format("{} steps in one call: {}", sp.length, scans_[st.index].why), sp.require_paths);
      bind_slots(st);
      be_.dispatch(*scans_[st.index].fused, in, out);
      if (tracing)
        trace::emit({trace::EventKind::dispatch,
                     be_.info().backend,
                     "scan",
                     exe.bound_buffers(static_cast<int>(in.size() + out.size())),
                     true,
                     0.0,
                     {}});
      continue;
    }
    if (st.kind == Step::Kind::control) {
      std::vector<Array> args;
      for (int b : st.in) {
        be_.incref(slot[b]);
        args.emplace_back(&be_, slot[b], p.buffers[b]);
      }
      const CompiledProgram& body = *scans_[st.index].body;
      auto res = scan_host_loop([&](const std::vector<Array>& a) { return body.run(a); }, p.controls[st.index].params,
                                args, scans_[st.index].why);
      for (std::size_t k = 0; k < st.out.size(); ++k) {
        slot[st.out[k]] = res[k].slot();
        be_.incref(slot[st.out[k]]);
        owned[st.out[k]] = true;
      }
      continue;
    }
    bind_slots(st);
    const bool kernel = st.kind == Step::Kind::kernel;
    be_.dispatch(kernel ? *kexe_[st.index] : *rexe_[st.index], in, out);
    if (tracing)
      trace::emit({trace::EventKind::dispatch,
                   be_.info().backend,
                   kernel ? p.kernels[st.index].name : std::string(prim_name(p.routines[st.index].prim)),
                   static_cast<int>(in.size() + out.size()),
                   kernel,
                   0.0,
                   {}});
  }
  std::vector<Array> res;
  for (int b : p.outputs) {
    if (b < p.num_inputs) {
      res.push_back(inputs[b]);
    } else if (owned[b]) {
      res.emplace_back(&be_, slot[b], p.buffers[b]);  // hand the run's reference to the caller
      owned[b] = false;
    } else {
      be_.incref(slot[b]);  // the same buffer returned twice
      res.emplace_back(&be_, slot[b], p.buffers[b]);
    }
  }
  return res;
}

}  // namespace jx
