#include "core/array/array.h"

#include <fmt/format.h>

#include "core/backends/backend.h"

namespace jx {

Array::Array(Backend* backend, SlotId slot, AVal aval) : backend_(backend), slot_(slot), aval_(std::move(aval)) {}

Array::Array(const Array& o) : backend_(o.backend_), slot_(o.slot_), aval_(o.aval_), disposed_(o.disposed_) {
  if (backend_) backend_->incref(slot_);
}

Array::Array(Array&& o) noexcept
    : backend_(o.backend_), slot_(o.slot_), aval_(std::move(o.aval_)), disposed_(o.disposed_) {
  o.backend_ = nullptr;
  o.disposed_ = false;
}

Array& Array::operator=(const Array& o) {
  if (this == &o) return *this;
  if (o.backend_) o.backend_->incref(o.slot_);
  release();
  backend_ = o.backend_;
  slot_ = o.slot_;
  aval_ = o.aval_;
  disposed_ = o.disposed_;
  return *this;
}

Array& Array::operator=(Array&& o) noexcept {
  if (this == &o) return *this;
  release();
  backend_ = o.backend_;
  slot_ = o.slot_;
  aval_ = std::move(o.aval_);
  disposed_ = o.disposed_;
  o.backend_ = nullptr;
  o.disposed_ = false;
  return *this;
}

Array::~Array() { release(); }

void Array::release() noexcept {
  if (backend_) backend_->decref(slot_);
  backend_ = nullptr;
}

void Array::check() const {
  if (disposed_) throw UseAfterDispose(fmt::format("Referenced tracer Array:{} has been disposed", aval_.str()));
  if (!backend_) throw Error("use of an empty (default-constructed or moved-from) jx::Array");
}

void Array::dispose() {
  check();
  release();
  disposed_ = true;
}

const AVal& Array::aval() const {
  check();
  return aval_;
}

std::string Array::str() const {
  return fmt::format("Array:{}{}", aval_.str(), disposed_ ? " (disposed)" : backend_ ? "" : " (empty)");
}

Backend& Array::backend() const {
  check();
  return *backend_;
}

SlotId Array::slot() const {
  check();
  return slot_;
}

std::vector<std::byte> Array::raw_bytes() const {
  check();
  std::vector<std::byte> raw(aval_.bytes());
  backend_->read(slot_, raw);
  return raw;
}

}  // namespace jx
