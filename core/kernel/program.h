#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/kernel/kernel.h"

namespace jx {

// A compiled jaxpr: buffers (program-level ids) and steps in execution order. Buffers
// [0, num_inputs) are the jaxpr's arguments then its constants; every other buffer is written
// by exactly one kernel or routine step and freed right after its last use unless it is an output.
struct Step {
  enum class Kind : std::uint8_t { kernel, routine, control, free } kind;
  int index = -1;  // into kernels / routines / controls
  std::vector<int> in, out;
};

struct Program {
  std::vector<AVal> buffers;
  int num_inputs = 0;
  std::vector<int> outputs;  // may repeat, may name inputs
  std::vector<Kernel> kernels;
  std::vector<Op> routines;
  std::vector<Op> controls;  // scans: their bodies are compiled as sub-programs
  std::vector<Step> steps;
  // contractions lowered into elementwise code (jit's unrolled sums of at most 8 terms): work a
  // backend weighs as it weighs reductions (vulkan: an associative-scan combine's form)
  int unrolled_sums = 0;
  std::string str() const;  // set_debug(4)
};

// A primitive made by vmap (PrimParams::unbatched), where the backend asked for it: its body before
// batching, whose operands are the batched primitive's from `first` on (operand first + i has the
// batch axis of `size` where batched[i]: consts on axis 0, a scan's carries on axis 0 and its xs
// on axis 1, an associative scan's leaves right before its scan axis, one past the body's). Each series runs `body`
// over its slices; every result has the batch axis where its operands do.
struct SeriesBody {
  Program body;
  int first = 0;
  std::int64_t size = 0;
  std::vector<bool> batched;
  int num_consts = 0;  // of `body`
};

// A scan whose body is a program: what a backend needs to compile the whole loop.
//   body inputs  consts (num_consts) | carry (num_carry) | x slices; outputs carry | y
//   operands     consts | init | xs (stacked on a leading axis of `length`); results carry | ys
struct ScanProgram {
  Program body;
  int num_consts = 0, num_carry = 0;
  std::int64_t length = 0;
  bool reverse = false;
  std::vector<AVal> operands, results;
  // a scan made by vmap: its unbatched body (every carry, and so every result, batched)
  using Series = SeriesBody;
  std::shared_ptr<const Series> series;
  std::string key() const;  // structural identity: body program + signature (and series body)
};

// A leaf of an associative scan computed where the scan first reads it, never stored: `kernel`
// (elementwise; its output the leaf's whole operand, element for element) reads its input b from
// the scan's extra operand inputs[b].
struct LeafKernel {
  int leaf = 0;
  Kernel kernel;
  std::vector<int> inputs;
};

// An associative scan whose combine is a program: body inputs consts | a leaves | b leaves (each
// a single element: the leaf with `axis` of length 1; a earlier), outputs the combined leaves.
//   operands  consts | leaves (length n along axis); results the scanned leaves
// With leaf_kernels (jit, where the backend takes them: BackendLimits::scan_leaf_kernels) the
// step binds consts | the other leaves | extra: operands keeps every leaf's aval.
struct AssocProgram {
  Program body;
  int num_consts = 0;
  std::int64_t axis = 0;
  bool reverse = false;
  std::vector<AVal> operands;
  std::shared_ptr<const SeriesBody> series;  // an associative scan made by vmap: its unbatched combine
  std::vector<LeafKernel> leaf_kernels;      // in order of leaf
  std::vector<AVal> extra;
  // results nothing reads after the scan (jit): a backend may leave them unwritten (empty: all read)
  std::vector<bool> unread;
  const LeafKernel* leaf_kernel(int leaf) const;  // nullptr: the leaf is bound
  std::string key() const;
};

}  // namespace jx
