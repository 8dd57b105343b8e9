#pragma once
// Internal to workloads/dlm's writer: numpy's .npz (a stored zip of .npy entries) — arrays
// written in place as they come (NpzRegions), then the other fields and the central directory
// (write_npz).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/dlm/dlm_output_file.h"
#include "workloads/dlm/dlm_write.h"

namespace jx::dlm {

struct ZipEntry {
  std::string name;
  std::uint32_t crc = 0;
  std::uint64_t size = 0, offset = 0;
};

// Reserved arrays written in place in the .npz: their entries come first in the file, laid out
// at reserve() (sizes are known), each piece written once at its final offset with its CRC
// taken on the spot; commit() combines the pieces' CRCs in order (zlib's crc32_combine) and
// patches them into the local headers. Steps-last arrays are stored column-major (npy's
// fortran_order), so a chunk of steps is one contiguous run there too.
class NpzRegions {
 public:
  NpzRegions(const std::string& path, const std::string& shown);
  ~NpzRegions();
  NpzRegions(const NpzRegions&) = delete;
  NpzRegions& operator=(const NpzRegions&) = delete;

  void add(const StepArray& a, std::int64_t steps);
  // After the last add: the blocks of every entry allocated at once (fallocate), so that the
  // writes that fill them in reserve none page by page. Where the file system cannot, nothing.
  void allocate();
  void write(std::size_t id, std::int64_t t0, std::int64_t count, const double* v);
  // Patches the CRCs in; returns the entry for the central directory.
  ZipEntry finish(std::size_t id);
  std::int64_t end() const { return static_cast<std::int64_t>(end_); }

 private:
  struct Piece {
    std::int64_t t0, count;
    std::uint32_t crc;
  };
  struct Region {
    ZipEntry entry;
    std::int64_t per_step = 1, steps = 0, crc_at = 0, data_at = 0;
    std::uint32_t header_crc = 0;
    bool permute = false;
    std::vector<std::int64_t> column_major;
    std::vector<Piece> pieces;
  };
  void put(std::string_view b, std::int64_t at);
  std::string shown_;
  int fd_;
  std::uint64_t end_ = 0;
  std::vector<Region> regions_;
  std::vector<double> scratch_;
};

// Writes `fields` as .npz entries after the in-place ones (a field naming a reserved array
// adopts its entry), then the central directory in the fields' order.
void write_npz(detail::OutputFile& out, const std::vector<Field>& fields, NpzRegions* in_place);

}  // namespace jx::dlm
