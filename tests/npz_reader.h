#pragma once
// A reader of the .npz files jxlab writes (stored zip, .npy v1.0 entries), for tests: every
// entry's CRC-32 is checked, float64 arrays come back row-major whatever their fortran_order.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npzt {

struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<double> values;  // float64 entries only, row-major
};

inline std::uint64_t le(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(s.at(at + static_cast<std::size_t>(i)));
  return v;
}

// "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }" -> its three fields
inline NpyArray parse_npy(const std::string& npy, const std::string& name) {
  if (npy.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(name + ": not a .npy entry");
  const std::size_t hlen = le(npy, 8, 2), start = 10 + hlen;
  const std::string dict = npy.substr(10, hlen);
  auto field = [&](const std::string& key) {
    const std::size_t k = dict.find("'" + key + "': ");
    if (k == std::string::npos) throw std::runtime_error(name + ": no " + key);
    return k + key.size() + 4;
  };
  NpyArray a;
  std::size_t d = field("descr") + 1;
  a.descr = dict.substr(d, dict.find('\'', d) - d);
  const bool fortran = dict.compare(field("fortran_order"), 4, "True") == 0;
  std::size_t s = field("shape") + 1;
  std::stringstream dims(dict.substr(s, dict.find(')', s) - s));
  for (std::string t; std::getline(dims, t, ',');)
    if (t.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoll(t));
  if (a.descr != "<f8") return a;
  std::int64_t n = 1;
  for (auto x : a.shape) n *= x;
  if (npy.size() - start != static_cast<std::size_t>(n) * 8) throw std::runtime_error(name + ": payload size");
  std::vector<double> raw(static_cast<std::size_t>(n));
  if (!raw.empty()) std::memcpy(raw.data(), npy.data() + start, raw.size() * 8);
  if (!fortran || a.shape.size() < 2) {
    a.values = std::move(raw);
    return a;
  }
  a.values.resize(raw.size());  // column-major -> row-major
  const std::size_t r = a.shape.size();
  std::vector<std::int64_t> idx(r, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t f = 0, stride = 1;
    for (std::size_t k = 0; k < r; ++k) f += idx[k] * stride, stride *= a.shape[k];
    a.values[static_cast<std::size_t>(i)] = raw[static_cast<std::size_t>(f)];
    for (std::size_t k = r; k-- > 0;)
      if (++idx[k] < a.shape[k])
        break;
      else
        idx[k] = 0;
  }
  return a;
}

// Every entry by name (".npy" dropped), in file order of the local headers.
inline std::map<std::string, NpyArray> read_npz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string z((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, NpyArray> out;
  for (std::size_t at = 0; at + 30 <= z.size() && le(z, at, 4) == 0x04034b50;) {
    const auto crc = static_cast<std::uint32_t>(le(z, at + 14, 4));
    const std::size_t size = le(z, at + 18, 4), name_len = le(z, at + 26, 2), extra = le(z, at + 28, 2);
    std::string name = z.substr(at + 30, name_len);
    const std::size_t data = at + 30 + name_len + extra;
    const std::string npy = z.substr(data, size);
    if (crc32(0L, reinterpret_cast<const Bytef*>(npy.data()), static_cast<uInt>(npy.size())) != crc)
      throw std::runtime_error(path + ": CRC mismatch in " + name);
    name = name.substr(0, name.size() - 4);
    out[name] = parse_npy(npy, name);
    at = data + size;
  }
  if (out.empty()) throw std::runtime_error(path + ": no zip entries");
  return out;
}

}  // namespace npzt
