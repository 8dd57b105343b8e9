// The lab's self-test workload: what a broken runtime does to a runner, on demand, so the
// runner's isolation is tested on real processes (tests/lab_isolation.sh). `behaviour`:
//   ok        records out0 = [1]
//   abort     std::abort() (a crash by SIGABRT, as a failed assertion)
//   segv      raise(SIGSEGV) (a crash by a bad access)
//   hang      sleeps for `seconds` (default 3600): the time limit's case
//   allocate  touches `mb` MB of memory (default 2048), then holds it for `seconds` (default 60):
//             the memory limit's case
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/jx.h"
#include "repros/repro.h"

namespace jx::lab {
namespace {

void selftest(Run& r) {
  const std::string b = r.params.value("behaviour", std::string("ok"));
  const double seconds = r.params.value("seconds", b == "hang" ? 3600.0 : 60.0);
  r.measure();
  if (b == "abort") std::abort();
  if (b == "segv") std::raise(SIGSEGV);
  if (b == "hang") std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  if (b == "allocate") {
    const std::size_t bytes = static_cast<std::size_t>(r.params.value("mb", 2048)) << 20;
    std::vector<char> hold(bytes);
    std::memset(hold.data(), 1, bytes);  // resident, not only reserved
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
  if (b != "ok" && b != "hang" && b != "allocate")
    throw Error("selftest: behaviour '" + b + "' is not one of ok, abort, segv, hang, allocate");
  r.value("out0", np::ones({1}, DType::float32));
}

}  // namespace

void register_selftest(std::map<std::string, Repro>& m) {
  m["lab_selftest"] = {
      "lab_selftest",
      "the lab's self-test: ok, abort, segv, hang or allocate on demand (params behaviour, seconds, mb)",
      selftest,
      {"behaviour", "seconds", "mb"},
      {"eager"},
      {}};
}

}  // namespace jx::lab
