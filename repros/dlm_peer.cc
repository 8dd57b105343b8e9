// The DLM workloads of the performance comparison with JAX (workloads/dlm/dlm_peer.h) as a repro,
// so scenarios can guard their paths on a backend: the parallel filter and smoother at state
// dimension m run their associative scans on the device (no host routine, no per-step recording,
// dispatches growing at most like log N), and B series at once (param batch: jit(vmap(workload)),
// whose scans run per series).
#include <fmt/format.h>

#include "repros/repro.h"
#include "workloads/dlm/dlm_peer.h"

namespace jx::lab {
namespace {

void dlm_peer(Run& r) {
  const std::string name = r.str("workload", "par_filter");
  const std::int64_t n = r.integer("n", 100), m = r.integer("m", 2), batch = r.integer("batch", 1);
  if (n < 2) throw Error(fmt::format("parameter 'n' must be at least 2, got {}", n));
  if (batch < 1) throw Error(fmt::format("parameter 'batch' must be at least 1, got {}", batch));
  const dlm::peer::Model md = dlm::peer::model(n, m);
  const dlm::peer::Fn f = dlm::peer::batched_workload(name, md, batch);
  outputs_under_transform(r, [f](const std::vector<Array>& in) { return f(in[0], in[1]); },
                          {dlm::peer::theta0(), batch == 1 ? md.y : dlm::peer::batch_series(md, batch)});
}

}  // namespace

void register_dlm_peer(std::map<std::string, Repro>& m) {
  auto check = [](const nlohmann::json& p, const std::string&) -> std::string {
    if (p.contains("workload") && p["workload"].is_string()) {
      const auto& names = dlm::peer::workload_names();
      const std::string w = p["workload"].get<std::string>();
      if (std::find(names.begin(), names.end(), w) == names.end())
        return fmt::format("workload '{}' is not one of {}", w, fmt::join(names, ", "));
    }
    if (p.contains("m") && p["m"].is_number_integer()) {
      const std::int64_t mm = p["m"].get<std::int64_t>();
      if (mm != 2 && mm != 4 && mm != 8 && mm != 13 && mm != 16)
        return fmt::format("m must be 2, 4, 8, 13 or 16, got {}", mm);
    }
    return "";
  };
  m["dlm_peer"] = {
      "dlm_peer",
      "the DLM workloads compared with JAX (params workload: seq_filter, seq_smoother, par_filter, "
      "par_smoother, par_grad, par_grad_fwd, par_mle; m: 2, 4, 8, 13, 16; n; batch: series at once), float32",
      dlm_peer,
      {"workload", "m", "n", "batch"},
      {"eager", "jit"},
      check};
}

}  // namespace jx::lab
