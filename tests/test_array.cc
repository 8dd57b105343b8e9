#include <cstdlib>

#include "core/backends/backend.h"
#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::throws_msg;

TEST(DType, NamesSizesPromotion) {
  EXPECT_EQ(dtype_name(DType::float32), "float32");
  EXPECT_EQ(dtype_name(DType::bool_), "bool");
  EXPECT_EQ(dtype_size(DType::float64), 8u);
  EXPECT_EQ(dtype_size(DType::bool_), 1u);
  EXPECT_EQ(dtype_from_name("f64"), DType::float64);
  EXPECT_EQ(dtype_from_name("int32"), DType::int32);
  EXPECT_THROW(dtype_from_name("float16"), ShapeError);
  EXPECT_EQ(promote(DType::int32, DType::float32), DType::float32);
  EXPECT_EQ(promote(DType::float32, DType::float64), DType::float64);
  EXPECT_EQ(promote(DType::bool_, DType::int32), DType::int32);
  EXPECT_EQ((AVal{DType::float32, {2, 2}}.str()), "float32[2,2]");
  EXPECT_EQ((AVal{DType::int32, {}}.str()), "int32[]");
}

TEST(Array, CopyAddsReferenceDestructionReleases) {
  const auto before = slot_count();
  {
    Array a = np::array({1.0, 2.0});
    EXPECT_EQ(slot_count(), before + 1);
    Array b = a;  // same slot, one more reference
    EXPECT_EQ(slot_count(), before + 1);
    EXPECT_EQ(a.slot(), b.slot());
    a.dispose();
    EXPECT_EQ(slot_count(), before + 1);  // b still holds it
    EXPECT_TRUE(all_close(b, {1, 2}));
    {
      Array c;
      c = b;
      EXPECT_EQ(c.slot(), b.slot());
    }
    EXPECT_EQ(slot_count(), before + 1);
  }
  EXPECT_EQ(slot_count(), before);
}

TEST(Array, DisposeReleasesEarlyAndAnyUseThrows) {
  const auto before = slot_count();
  Array a = np::zeros({2, 2});
  a.dispose();
  EXPECT_EQ(slot_count(), before);
  EXPECT_TRUE(a.is_disposed());
  const std::string msg = "Referenced tracer Array:float32[2,2] has been disposed";
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { a.shape(); }, msg));
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { a.to_vector<float>(); }, msg));
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { np::add(a, a); }, msg));
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { a.dispose(); }, msg));
  Array copy = a;  // copying a dead handle gives a dead handle
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { np::exp(copy); }, msg));
  Array i = np::array({1.0}, DType::int32);
  i.dispose();
  EXPECT_TRUE(throws_msg<UseAfterDispose>([&] { i + 1.0; }, "Referenced tracer Array:int32[1] has been disposed"));
  EXPECT_EQ(a.str(), "Array:float32[2,2] (disposed)");
}

TEST(Array, AssigningOverAHandleReleasesItsSlot) {
  const auto before = slot_count();
  Array a = np::ones({3});
  a = np::zeros({4});
  EXPECT_EQ(slot_count(), before + 1);
  Array b = np::ones({5});
  a = std::move(b);
  EXPECT_EQ(slot_count(), before + 1);
  EXPECT_TRUE(b.is_empty());
  EXPECT_THROW(b.shape(), Error);
  a = a;  // self-assignment keeps the reference
  EXPECT_EQ(a.size(), 5);
}

TEST(Array, MovedFromAndEmptyHandlesThrow) {
  Array a = np::ones({2});
  Array b = std::move(a);
  EXPECT_TRUE(a.is_empty());
  EXPECT_FALSE(a.is_disposed());
  EXPECT_TRUE(throws_msg<Error>([&] { a.aval(); }, "use of an empty (default-constructed or moved-from) jx::Array"));
  Array e;
  EXPECT_THROW(np::exp(e), Error);
  EXPECT_EQ(b.size(), 2);
}

TEST(Array, ReadBackAndItem) {
  Array a = np::array({{1.5, 2.5}, {3.5, 4.5}}, DType::float64);
  EXPECT_EQ(a.shape(), (Shape{2, 2}));
  EXPECT_EQ(a.ndim(), 2u);
  EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(np::scalar(7.25, DType::float64).item<double>(), 7.25);
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { a.item<double>(); }, {"item", "float64[2,2]"}));
  Array b = np::array(std::vector<bool>{true, false, true});
  EXPECT_EQ(b.dtype(), DType::bool_);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{1, 0, 1}));
}

TEST(Backend, RegistryAndDefaultDevice) {
  const char* env = std::getenv("JX_DEVICE");
  const std::string want = env && *env ? env : "cpu";  // the suite also runs with JX_DEVICE=native
  EXPECT_EQ(default_backend().info().backend, want);
  EXPECT_TRUE(jxt::throws_with<BackendError>([] { default_device("nosuch"); }, {"unknown backend 'nosuch'", "cpu"}));
  EXPECT_EQ(default_backend().info().backend, want);  // unchanged after the failure
  {
    DefaultDeviceScope scope("cpu");
    EXPECT_EQ(default_backend().info().backend, "cpu");
  }
  EXPECT_EQ(default_backend().info().backend, want);
  auto devs = devices();
  ASSERT_FALSE(devs.empty());
  EXPECT_EQ(devs[0].backend, "cpu");
  EXPECT_TRUE(devs[0].available);
  EXPECT_TRUE(devs[0].limits.float64);
}

TEST(Backend, SlotsCountBytesAndRejectBadSizes) {
  Backend& be = backend("cpu");
  const auto n0 = be.slot_count(), b0 = be.bytes();
  SlotId s = be.malloc({DType::float64, {3}});
  EXPECT_EQ(be.slot_count(), n0 + 1);
  EXPECT_EQ(be.bytes(), b0 + 24);
  std::vector<std::byte> small(8);
  EXPECT_TRUE(
      jxt::throws_with<BackendError>([&] { be.write(s, small); }, {"write of 8 bytes", "24 bytes", "float64[3]"}));
  be.incref(s);
  be.decref(s);
  EXPECT_EQ(be.slot_count(), n0 + 1);
  be.decref(s);
  EXPECT_EQ(be.slot_count(), n0);
  EXPECT_EQ(be.bytes(), b0);
  EXPECT_THROW(be.read(s, small), BackendError);  // freed slot: an error, not a crash
}

// host_data: the slot's bytes in place for the host backends (what read() copies), nullptr for a
// device backend; a freed slot is an error, not a dangling pointer.
TEST(Backend, HostDataIsTheSlotInPlaceOnHostBackends) {
  for (const DeviceInfo& d : devices()) {
    if (!d.available) continue;
    Backend& be = backend(d.backend);
    const std::vector<double> v{1.5, -2.0, 3.25};
    SlotId s = be.malloc({DType::float64, {3}});
    be.write(s, std::as_bytes(std::span(v)));
    const std::byte* p = be.host_data(s);
    if (d.backend == "vulkan") {
      EXPECT_EQ(p, nullptr);
    } else {
      ASSERT_NE(p, nullptr) << d.backend;
      EXPECT_EQ(std::memcmp(p, v.data(), 24), 0) << d.backend;
      const std::vector<double> w{7.0, 8.0, 9.0};
      be.write(s, std::as_bytes(std::span(w)));
      EXPECT_EQ(std::memcmp(be.host_data(s), w.data(), 24), 0) << d.backend;  // in place, not a snapshot
    }
    be.decref(s);
    if (d.backend != "vulkan") EXPECT_THROW(be.host_data(s), BackendError) << d.backend;
  }
}

TEST(Prim, TableIsTotalAndNamed) {
  EXPECT_EQ(prim_name(Prim::dot_general), "dot_general");
  EXPECT_EQ(prim_arity(Prim::select), 3);
  EXPECT_EQ(prim_arity(Prim::concatenate), -1);
  EXPECT_EQ(prim_kind(Prim::cholesky), PrimKind::routine);
  for (int i = 0; i < kNumPrims; ++i) EXPECT_NE(prim_name(static_cast<Prim>(i)), "invalid");
  PrimParams p;
  p.axes = {0, 1};
  EXPECT_EQ(p.str(Prim::reduce_sum), "axes=(0, 1)");
}
