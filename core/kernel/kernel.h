#pragma once
#include <string>
#include <vector>

#include "core/prim/prim.h"

namespace jx {

// The kernel IR: one output buffer computed over an iteration space. Every load reads an input
// buffer through an affine view (offset + Σ stride_d · i_d over the space dims), so reshape,
// transpose, broadcast (stride 0), slice and rev never copy. Scalar expressions are a DAG of
// nodes in topological order. With reduce_axes, `body` is accumulated over those axes with
// `reduce_op` and `epilogue` (which may read the accumulator through a ReduceResult node, and
// loads whose strides on the reduced axes are 0) maps it to the output element. A load may be
// clamped into its buffer (windows of concatenate/pad under a select).
// One primitive application with everything resolved: the unit a backend prepares.
struct Op {
  Prim prim;
  PrimParams params;
  std::vector<AVal> in, out;
};

enum class KNodeKind : std::uint8_t { load, constant, iota, alu, reduce_result };

struct KNode {
  KNodeKind kind;
  DType dtype;
  Prim prim = Prim::add;       // alu: the elementwise primitive (unary, binary, select, convert)
  int a = -1, b = -1, c = -1;  // alu operands (node indices); an indexed load's index in a
  int load = -1;               // load: index into Kernel::loads
  double value = 0.0;          // constant
  int dim = 0;                 // iota: space dimension
  bool operator==(const KNode&) const = default;
};

struct KLoad {
  int buffer;  // kernel input index
  std::int64_t offset = 0;
  std::vector<std::int64_t> strides;  // one per space dimension
  // The element index is clamped into [0, size of the buffer): a window of concatenate or pad
  // read where its select discards the value (the read stays inside the buffer).
  bool clamp = false;
  // The element index is the load node's operand `a` (an int32 node) instead of offset and
  // strides: a view no affine map expresses (a reshape merging dims that are not contiguous).
  bool indexed = false;
  bool operator==(const KLoad&) const = default;
};

struct Kernel {
  std::string name;
  Shape space;
  std::vector<std::int64_t> reduce_axes;  // sorted; empty: elementwise kernel
  Prim reduce_op = Prim::reduce_sum;
  std::vector<KNode> nodes;
  std::vector<KLoad> loads;
  std::vector<AVal> inputs;  // avals of the input buffers (row-major contiguous)
  int body = -1;
  int epilogue = -1;  // -1: output = body (elementwise) or the accumulator (reduction)
  AVal out;
  // The budget leaves this kernel one binding beyond its buffers (a backend may then split a long
  // reduction over workgroups through a scratch buffer bound last). Set by lowering, the one place
  // that decides what a kernel may bind.
  bool scratch_binding = false;

  int buffers() const { return static_cast<int>(inputs.size()) + 1; }
  // Nodes `root` depends on (itself included), in topological (index) order.
  std::vector<int> reachable(int root) const;
  bool is_reduction() const { return !reduce_axes.empty(); }
  std::string str() const;  // readable form (set_debug(3))
  std::string key() const;  // structural identity (cache key of compiled kernels)
};

}  // namespace jx
