#pragma once
// Writing DLM results without holding them twice: a result is a list of named fields, each a
// float64 array read in pieces (from memory or from a file region), a scalar, a string or a
// small JSON object. Two formats:
//   json  the toolbox's *-out-m.json layout (nested row-major lists, NaN as null), streamed;
//         compact, or indented with --pretty;
//   npz   numpy's .npz (a stored zip of .npy files, np.load reads it): raw little-endian
//         float64, no number formatting at all. Objects become "name/key" entries.
// Output goes to `<path>.tmp`, renamed over `path` by commit(): a reader never sees half a file
// and a failed run leaves nothing behind.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/jx.h"

namespace jx::dlm {

enum class OutputFormat { json, npz };
// --format if given ("json" | "npz"), else from the file name (.npz), else json.
OutputFormat output_format(const std::string& format, const std::string& path);

// Reads count values starting at the row-major element `first` into out.
using ValueReader = std::function<void(std::int64_t first, std::int64_t count, double* out)>;

struct Field {
  std::string name;
  Shape shape;       // {} for a scalar
  ValueReader read;  // arrays and scalars: float64 values
  enum class Kind { array, integer, boolean, text, object } kind = Kind::array;
  int reserved = -1;  // a ResultWriter's reserved array (npz: already in the output file)
  std::int64_t integer = 0;
  std::string text;
  nlohmann::json object;  // kind object: numbers, bools, strings and lists of numbers

  static Field array(std::string name, const Array& a);  // float64 values: in place from host memory, else a copy
  static Field values(std::string name, Shape shape, std::vector<double> v);
  static Field number(std::string name, double v);
  static Field count(std::string name, std::int64_t v);
  static Field string(std::string name, std::string v);
  static Field json_object(std::string name, nlohmann::json v);
};

// A field list as one JSON document (tests and small results).
nlohmann::json to_json(const std::vector<Field>& fields);

// A per-step output array: `inner` values per step, in the toolbox's layout steps last (xf [m,n],
// Cf [m,m,n]) or steps first (xstd [n,m], ystd [n]). Pieces arrive step-major ([count] + inner,
// row-major), in any order (backward chunks arrive last to first).
struct StepArray {
  std::string name;
  Shape inner;
  bool steps_last = true;
};

// Where reserved arrays live until commit. json: float64 regions in the toolbox's row-major
// layout, in memory up to kMemoryRegionBytes, else in a scratch file beside the output, unlinked
// as soon as it is open (nothing is left behind). npz: in place, in the output file itself (each
// piece written once, at its final offset; its CRC taken while it is in cache).
class RegionFile;
class NpzRegions;
constexpr std::int64_t kMemoryRegionBytes = std::int64_t{256} << 20;

class ResultWriter {
 public:
  // Checks the destination at once (not a folder, its folder exists, writable).
  ResultWriter(std::string path, OutputFormat format, bool pretty);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Plans the per-step arrays of `steps` steps filled in pieces before commit, all at once;
  // returns their ids in order. npz: refuses here, before any work, output past 4 GiB.
  std::vector<int> reserve(const std::vector<StepArray>& arrays, std::int64_t steps);
  // Writes steps [t0, t0 + count) of a reserved array: values [count] + inner, row-major.
  void write_steps(int id, std::int64_t t0, std::int64_t count, const double* values);
  // A reserved array as a field (in the list passed to commit, in any position).
  Field reserved(int id) const;
  // Writes every field in order, then renames the temporary file over the destination. Every
  // step of every reserved array must have been written.
  void commit(const std::vector<Field>& fields);
  std::int64_t bytes_written() const { return bytes_; }

 private:
  std::string path_, tmp_;
  OutputFormat format_;
  bool pretty_;
  bool committed_ = false;
  std::int64_t bytes_ = 0, steps_ = 0;
  std::unique_ptr<RegionFile> regions_;  // json
  std::unique_ptr<NpzRegions> npz_;      // npz
  struct Reserved {
    StepArray array;
    std::int64_t per_step = 1;  // values per step
    std::int64_t offset = 0;    // json: of the float64 payload in regions_
  };
  std::vector<Reserved> reserved_;
};

}  // namespace jx::dlm
