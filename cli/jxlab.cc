#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>

#include "core/jx.h"

namespace {

int cmd_devices() {
  fmt::print("{:<8} {:<10} {:<24} {}\n", "backend", "usable", "limits", "device");
  for (const auto& d : jx::devices()) {
    std::string limits = fmt::format("buffers/kernel={} f64={}",
                                     d.limits.max_buffers_per_kernel ? std::to_string(d.limits.max_buffers_per_kernel) : "unlimited",
                                     d.limits.float64 ? "yes" : "no");
    fmt::print("{:<8} {:<10} {:<24} {}\n", d.backend, d.available ? "yes" : "no", limits,
               d.available ? d.device : fmt::format("{} ({})", d.device, d.reason));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"jxlab: a reproduction lab for array/autodiff/JIT runtimes"};
  app.set_version_flag("--version", fmt::format("jxlab {}", jx::kVersion));
  app.require_subcommand(1);
  int debug = 0;
  app.add_option("--debug", debug, "debug level: 1 compiles and scan paths, 2 generated code, 3 kernels, 4 programs")
      ->check(CLI::Range(0, 4));
  app.parse_complete_callback([&] { jx::set_debug(debug); });
  auto* devices = app.add_subcommand("devices", "list backends: device, usability and key limits");
  int rc = 0;
  devices->callback([&] { rc = cmd_devices(); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const jx::Error& e) {
    fmt::print(stderr, "jxlab: {}\n", e.what());
    return 1;
  }
  return rc;
}
