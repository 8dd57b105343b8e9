#pragma once
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/shape.h"

namespace jx {

class Backend;
class Tracer;
using SlotId = std::uint64_t;

// A handle sharing ownership of one backend slot, or of a tracer while a transformation runs.
// Copying adds a reference (to the slot, or to the tracer), destruction releases it, dispose()
// releases it early and kills the handle: every later use (including a second dispose) throws
// UseAfterDispose. A moved-from or default-constructed handle is empty; using it throws
// jx::Error. Reading the data of a tracer throws TracerError.
class Array {
 public:
  Array() = default;
  // Adopts one existing reference to `slot` (does not incref).
  Array(Backend* backend, SlotId slot, AVal aval);
  explicit Array(std::shared_ptr<Tracer> tracer);
  Array(const Array& o);
  Array(Array&& o) noexcept;
  Array& operator=(const Array& o);
  Array& operator=(Array&& o) noexcept;
  ~Array();

  void dispose();
  bool is_disposed() const { return disposed_; }
  bool is_empty() const { return backend_ == nullptr && !tracer_ && !disposed_; }
  bool is_tracer() const { return tracer_ != nullptr; }
  const std::shared_ptr<Tracer>& tracer() const;  // throws unless is_tracer()

  const AVal& aval() const;
  DType dtype() const { return aval().dtype; }
  const Shape& shape() const { return aval().shape; }
  std::size_t ndim() const { return aval().ndim(); }
  std::int64_t size() const { return aval().size(); }
  std::string str() const;  // "Array:float32[2,2]" (+ ", disposed")

  Backend& backend() const;
  SlotId slot() const;

  // Copies the data to the host converted to T (bool reads as 0/1).
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;  // requires size() == 1
  std::vector<std::byte> raw_bytes() const;

 private:
  void check() const;
  void release() noexcept;

  Backend* backend_ = nullptr;
  SlotId slot_ = 0;
  AVal aval_;
  std::shared_ptr<Tracer> tracer_;
  bool disposed_ = false;
};

std::vector<double> to_f64(const std::vector<std::byte>& raw, DType d);

// Copies a concrete array to another backend (or returns it when already there).
Array device_put(const Array& x, const std::string& backend_name);

// Uploads host bytes (row-major, aval.bytes() long) to a fresh slot.
Array array_from_bytes(std::span<const std::byte> bytes, const AVal& aval, Backend* on = nullptr);

template <class T>
std::vector<T> Array::to_vector() const {
  auto raw = raw_bytes();
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(size()));
  visit_dtype(dtype(), [&]<class S>() {
    const std::size_t n = raw.size() / sizeof(S);
    for (std::size_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, raw.data() + i * sizeof(S), sizeof(S));
      out.push_back(static_cast<T>(v));
    }
  });
  return out;
}

template <class T>
T Array::item() const {
  if (size() != 1) throw ShapeError("item: expected an array with one element, got " + aval().str());
  return to_vector<T>()[0];
}

}  // namespace jx
