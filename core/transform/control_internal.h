#pragma once
// The control primitives' internals, shared by their rules (scan.cc, assoc_scan.cc, while_loop.cc,
// cond.cc) and by the JIT (core/jit), which compiles their bodies and runs them eagerly: bodies
// as constant-free jaxprs, host loops, decompositions.
#include <functional>
#include <optional>
#include <string>

#include "core/ir/jaxpr.h"
#include "core/transform/control.h"
#include "core/trace/builder.h"

namespace jx {

// The scan body's jaxpr (from a scan eqn's params), and the host loop that runs it with `body`
// (reports the path). Used by compiled programs.
const Jaxpr& scan_body_jaxpr(const PrimParams& p);
// A vmapped scan's or associative scan's body before batching (PrimParams::unbatched), or nullptr.
const Jaxpr* unbatched_jaxpr(const PrimParams& p);
std::vector<Array> scan_host_loop(const FlatFn& body, const PrimParams& p, const std::vector<Array>& ops,
                                  const std::string& why);
// The scan_path event: carries the path (and its name, the backend, the details), logged at
// debug level 1; set_scan_path_callback and ScanPathTracker subscribe to it (the one channel).
void report_scan_path(ScanPath path, const std::string& backend, const std::string& details);
// "N steps in one call: <the plan's reason>" (fused), "... recorded into one submission" (preencoded),
// "... as a host loop" (fallback)
std::string scan_path_details(ScanPath path, std::int64_t length, const std::string& reason);
// require_path, checked once, where a scan's plan is made (CompiledProgram): unless `require`
// allows the path, reports it and throws ScanPathError.
void require_scan_path(ScanPath path, const std::string& backend, const std::string& details, ScanPaths require);
// An associative_scan eqn's combine body (consts..., a..., b...) -> c... on single elements, and
// its decomposition into other primitives over operand avals `in`: the odd/even recursion, or
// (fold) a sequential lax.scan for backends that compile loops.
const Jaxpr& assoc_body_jaxpr(const PrimParams& p);
Jaxpr assoc_decomposition(const PrimParams& p, const std::vector<AVal>& in, bool fold);
// A control primitive on concrete operands (the dispatcher's apply_control): while_loop and cond
// on the host; scan and associative_scan first through `compiled` (the JIT's: a one-equation
// program where the backend runs the loop; nullopt, with the reason in `why`, where it cannot),
// else the host loop (scan) or the decomposition (associative_scan).
using CompiledControl = std::function<std::optional<std::vector<Array>>(
    Prim prim, const PrimParams& p, const std::vector<Array>& ops, std::string& why)>;
std::vector<Array> control_eval(Prim prim, const std::vector<Array>& ops, const PrimParams& p,
                                const CompiledControl& compiled);

// A closed jaxpr with no constants, as a control primitive's body.
struct JaxprBody final : SubProgram {
  explicit JaxprBody(Jaxpr j) : jaxpr(std::move(j)) {}
  std::vector<AVal> in_avals() const override {
    std::vector<AVal> v;
    for (int i : jaxpr.invars) v.push_back(jaxpr.avals[i]);
    return v;
  }
  std::vector<AVal> out_avals() const override {
    std::vector<AVal> v;
    for (const Atom& a : jaxpr.outs) v.push_back(jaxpr.aval_of(a));
    return v;
  }
  std::string str() const override { return jaxpr.str(); }
  Jaxpr jaxpr;
};

// Small helpers of the control rules (cond.cc, while_loop.cc): operands' avals, and the slice
// [from, from + n) of a list.
namespace control_detail {
inline std::vector<AVal> avals(const std::vector<Array>& v) {
  std::vector<AVal> a;
  for (const Array& x : v) a.push_back(x.aval());
  return a;
}
template <class V>
V part(const V& v, std::size_t from, std::size_t n) {
  return V(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + n));
}
}  // namespace control_detail

// Turns a closed jaxpr's constants into leading inputs: returns the jaxpr and the constants.
std::pair<Jaxpr, std::vector<Array>> hoist(ClosedJaxpr cj);

std::vector<Array> assoc_eval(const std::vector<Array>& ops, const PrimParams& p);
// The scan as a fold: a lax.scan whose carry is the prefix, one combine per later element.
std::vector<Array> assoc_fold(const std::vector<Array>& ops, const PrimParams& p);
// The body as a function of leaves of any length L along ax (vmapped over L), consts bound.
lax::AssocFn assoc_combine_fn(const Jaxpr& body, const std::vector<Array>& consts, int ax);
// Forward mode: one associative scan of (element, tangent) pairs whose body is the jvp of the
// combine.
std::pair<std::vector<Array>, std::vector<Array>> assoc_jvp(const std::vector<Array>& x,
                                                            const std::vector<std::optional<Array>>& t,
                                                            const PrimParams& p, bool linearizing);
// Under linearize (assoc_transpose.cc): a pair scan like forward mode's where its transpose, a
// reverse associative scan, runs in a few dispatches (launch-bound backends; there, where
// positions × floats per position reach JX_ASSOC_GRAD_MIN_WORK, `levels`: assoc_grad_levels()
// levels of the odd/even recursion, enough to leave the pair scan of the rest ~10^6 positions ×
// floats); elsewhere the fold (a lax.scan), whose jvp and transpose are the scan's; the odd/even
// recursion under a buffer budget on a sequential backend, or under the JS runtime's replay
// switches. JX_ASSOC_GRAD forces one.
enum class AssocGradForm { pairs, fold, recursion, levels };
int assoc_grad_levels(const std::vector<Array>& x, const PrimParams& p);  // the levels form's depth
AssocGradForm assoc_grad_form(const std::vector<Array>& x, const PrimParams& p);
std::pair<std::vector<Array>, std::vector<Array>> assoc_linearize_fold(const std::vector<Array>& x,
                                                                       const std::vector<std::optional<Array>>& t,
                                                                       const PrimParams& p);
// lax.while_loop (while_loop.cc): the host loop, forward mode and batching.
std::vector<Array> while_eval(const std::vector<Array>& ops, const PrimParams& p);
std::pair<std::vector<Array>, std::vector<Array>> while_jvp(const std::vector<Array>& x,
                                                            const std::vector<std::optional<Array>>& t,
                                                            const PrimParams& p, bool linearizing);
std::vector<std::pair<Array, std::optional<std::int64_t>>> while_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p);
// lax.cond (cond.cc): the chosen branch only, forward mode, transpose and batching.
std::vector<Array> bind_cond(const Array& index, const std::vector<FlatFn>& fns, const std::vector<AVal>& in,
                             const std::vector<Array>& ops);
std::vector<Array> cond_eval(const std::vector<Array>& ops, const PrimParams& p);
std::pair<std::vector<Array>, std::vector<Array>> cond_jvp(const std::vector<Array>& x,
                                                           const std::vector<std::optional<Array>>& t,
                                                           const PrimParams& p, bool linearizing);
std::vector<std::pair<Array, std::optional<std::int64_t>>> cond_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p);
struct LinearIn;
std::vector<std::optional<Array>> cond_transpose(const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                 const PrimParams& p);
// Transpose of a pair scan (PrimParams::tangent_of) in its tangent operands.
std::vector<std::optional<Array>> assoc_transpose(const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                  const PrimParams& p);
// vmap: the primitive with the combine vmapped (batched leaves carry the batch axis after `axis`).
std::vector<std::pair<Array, std::optional<std::int64_t>>> assoc_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p);

}  // namespace jx
