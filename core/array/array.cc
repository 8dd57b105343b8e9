#include "core/array/array.h"

#include <fmt/format.h>

#include "core/array/tracer.h"
#include "core/backends/backend.h"

namespace jx {

Array::Array(Backend* backend, SlotId slot, AVal aval) : backend_(backend), slot_(slot), aval_(std::move(aval)) {}

Array::Array(std::shared_ptr<Tracer> tracer) : aval_(tracer->aval), tracer_(std::move(tracer)) {}

Array::Array(const Array& o)
    : backend_(o.backend_), slot_(o.slot_), aval_(o.aval_), tracer_(o.tracer_), disposed_(o.disposed_) {
  if (backend_) backend_->incref(slot_);
}

Array::Array(Array&& o) noexcept
    : backend_(o.backend_),
      slot_(o.slot_),
      aval_(std::move(o.aval_)),
      tracer_(std::move(o.tracer_)),
      disposed_(o.disposed_) {
  o.backend_ = nullptr;
  o.disposed_ = false;
}

Array& Array::operator=(const Array& o) {
  if (this == &o) return *this;
  if (o.backend_) o.backend_->incref(o.slot_);
  auto keep = o.tracer_;  // o may be owned by what release() frees
  release();
  backend_ = o.backend_;
  slot_ = o.slot_;
  aval_ = o.aval_;
  tracer_ = std::move(keep);
  disposed_ = o.disposed_;
  return *this;
}

Array& Array::operator=(Array&& o) noexcept {
  if (this == &o) return *this;
  release();
  backend_ = o.backend_;
  slot_ = o.slot_;
  aval_ = std::move(o.aval_);
  tracer_ = std::move(o.tracer_);
  disposed_ = o.disposed_;
  o.backend_ = nullptr;
  o.disposed_ = false;
  return *this;
}

Array::~Array() { release(); }

void Array::release() noexcept {
  if (backend_) backend_->decref(slot_);
  backend_ = nullptr;
  tracer_.reset();
}

void Array::check() const {
  if (disposed_) throw UseAfterDispose(fmt::format("Referenced tracer Array:{} has been disposed", aval_.str()));
  if (!backend_ && !tracer_) throw Error("use of an empty (default-constructed or moved-from) jx::Array");
}

static void concrete_only(const Array& a, const std::shared_ptr<Tracer>& t) {
  if (t)
    throw TracerError(
        fmt::format("cannot read the value of traced {} inside a transformation (jit, grad, vmap, ...); "
                    "compute it outside the transformed function or pass it as a static argument",
                    a.str()));
}

const std::shared_ptr<Tracer>& Array::tracer() const {
  check();
  if (!tracer_) throw Error(fmt::format("{} is a concrete array, not a tracer", str()));
  return tracer_;
}

void Array::dispose() {
  check();
  if (tracer_ && tracer_->alive) *tracer_->alive = false;  // replay borrowed_residuals
  release();
  disposed_ = true;
}

const AVal& Array::aval() const {
  check();
  return tracer_ ? tracer_->aval : aval_;
}

std::string Array::str() const {
  return fmt::format("Array:{}{}", aval_.str(), disposed_ ? " (disposed)" : backend_ || tracer_ ? "" : " (empty)");
}

Backend& Array::backend() const {
  check();
  concrete_only(*this, tracer_);
  return *backend_;
}

SlotId Array::slot() const {
  check();
  concrete_only(*this, tracer_);
  return slot_;
}

std::vector<std::byte> Array::raw_bytes() const {
  check();
  concrete_only(*this, tracer_);
  std::vector<std::byte> raw(aval_.bytes());
  backend_->read(slot_, raw);
  return raw;
}

Array device_put(const Array& x, const std::string& name) {
  Backend& to = backend(name);
  if (&x.backend() == &to) return x;
  return array_from_bytes(x.raw_bytes(), x.aval(), &to);
}

Array array_from_bytes(std::span<const std::byte> bytes, const AVal& aval, Backend* on) {
  if (bytes.size() != aval.bytes())
    throw ShapeError(fmt::format("array: {} bytes given for {} ({} bytes)", bytes.size(), aval.str(), aval.bytes()));
  Backend& be = on ? *on : default_backend();
  Array a(&be, be.malloc(aval), aval);
  be.write(a.slot(), bytes);
  return a;
}

}  // namespace jx
