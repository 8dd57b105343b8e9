#include "core/kernel/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace jx {

std::string Program::str() const {
  std::string s = fmt::format("program: {} inputs, {} buffers, {} kernels, {} routines\n", num_inputs, buffers.size(),
                              kernels.size(), routines.size());
  for (const Step& st : steps) {
    switch (st.kind) {
      case Step::Kind::kernel:
        s += fmt::format("  execute {} ({} buffers) in {} -> {}\n", kernels[st.index].name, kernels[st.index].buffers(),
                         fmt::join(st.in, ","), fmt::join(st.out, ","));
        break;
      case Step::Kind::routine:
        s += fmt::format("  routine {} in {} -> {}\n", prim_name(routines[st.index].prim), fmt::join(st.in, ","),
                         fmt::join(st.out, ","));
        break;
      case Step::Kind::control:
        s += fmt::format("  {} length={} in {} -> {}\n", prim_name(controls[st.index].prim),
                         controls[st.index].params.length, fmt::join(st.in, ","), fmt::join(st.out, ","));
        break;
      case Step::Kind::free: s += fmt::format("  free {}\n", fmt::join(st.in, ",")); break;
    }
  }
  return s + fmt::format("  outputs {}", fmt::join(outputs, ","));
}

namespace {
// Structural identity of a loop-like program: header, operand avals, the body and its kernels.
std::string signature_key(std::string k, const std::vector<AVal>& operands, const Program& body) {
  for (const auto& a : operands) k += a.str() + ",";
  k += body.str();
  for (const auto& kern : body.kernels) k += "|" + kern.key();
  for (const auto& op : body.routines) k += "|" + std::string(prim_name(op.prim)) + op.params.str(op.prim);
  return k;
}

std::string series_key(std::string k, const std::shared_ptr<const SeriesBody>& series) {
  if (!series) return k;
  k += fmt::format("|series|{}|{}|{}|", series->first, series->size, series->num_consts);
  for (bool b : series->batched) k += b ? '1' : '0';
  return signature_key(k + "|", {}, series->body);
}
}  // namespace

std::string ScanProgram::key() const {
  return series_key(
      signature_key(fmt::format("scan|{}|{}|{}|{}|", num_consts, num_carry, length, reverse), operands, body), series);
}

const LeafKernel* AssocProgram::leaf_kernel(int leaf) const {
  for (const LeafKernel& lk : leaf_kernels)
    if (lk.leaf == leaf) return &lk;
  return nullptr;
}

std::string AssocProgram::key() const {
  std::string k =
      series_key(signature_key(fmt::format("assoc|{}|{}|{}|", num_consts, axis, reverse), operands, body), series);
  for (const LeafKernel& lk : leaf_kernels)
    k += fmt::format("|leaf {} {} <- {}", lk.leaf, lk.kernel.key(), fmt::join(lk.inputs, ","));
  for (const AVal& a : extra) k += "|" + a.str();
  k += "|unread ";
  for (bool u : unread) k += u ? '1' : '0';
  return k;
}

}  // namespace jx
