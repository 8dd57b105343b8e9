#include "core/backends/native/compiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/stat.h>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "core/base/errors.h"
#include "core/base/env.h"
#include "core/base/hash.h"
#include "core/instrument/instrument.h"

namespace fs = std::filesystem;

namespace jx::native {

Library::~Library() {
  if (handle_) dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* p = dlsym(handle_, name.c_str());
  if (!p) throw BackendError(fmt::format("native: symbol {} missing from compiled library", name));
  return p;
}

namespace {
// A folder we can create files in (made if missing).
bool usable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return !ec && fs::is_directory(dir, ec) && access(dir.c_str(), W_OK | X_OK) == 0;
}

// $TMPDIR/jxlab-native-<uid>, made with mode 0700. jx loads compiled code from it, so a folder
// of that name that another user owns, or that others may write to, is refused.
std::string private_temp_cache() {
  const char* t = std::getenv("TMPDIR");
  const fs::path dir = fs::path(t && *t ? t : "/tmp") / fmt::format("jxlab-native-{}", getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw BackendError(
        fmt::format("native: cannot create the compile cache {}: {}", dir.string(), std::strerror(errno)));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw BackendError(fmt::format("native: {} is not a folder; refusing it as the compile cache", dir.string()));
  if (st.st_uid != getuid())
    throw BackendError(
        fmt::format("native: the compile cache {} belongs to another user (uid {}); refusing to load code from it",
                    dir.string(), st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw BackendError(
        fmt::format("native: the compile cache {} is writable by others (mode {:o}); refusing to load code from it",
                    dir.string(), st.st_mode & 0777));
  return dir.string();
}
}  // namespace

std::string cache_dir() {
  // JX_NATIVE_CACHE is used as given: a problem with it is the caller's error, reported at use
  if (const char* e = std::getenv("JX_NATIVE_CACHE"); e && *e) return e;
  static const std::string dir = [] {
    std::string want;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
      want = std::string(x) + "/jxlab/native";
    else if (const char* h = std::getenv("HOME"); h && *h)
      want = std::string(h) + "/.cache/jxlab/native";
    if (!want.empty() && usable(want)) return want;
    const std::string tmp = private_temp_cache();
    std::fprintf(stderr, "jx: warning: %s; the native compile cache is %s\n",
                 want.empty() ? "HOME is not set" : fmt::format("cannot write {}", want).c_str(), tmp.c_str());
    return tmp;
  }();
  return dir;
}

std::string compiler_command(std::size_t source_bytes) {
  const char* cc = std::getenv("JX_CC");
  // no -ffast-math: NaN/inf semantics and rounding must match the cpu oracle. Very large
  // programs (hessians of unrolled associative scans: 1.1 MB of C took 21.5 s at -O3, 10.4 s at
  // -O1) get -O1: compile time grows faster than the run time they save.
  const char* opt = source_bytes > kLargeSource ? "-O1" : "-O3";
  return fmt::format("{} -std=c11 {} -march=native -ffp-contract=off -fno-math-errno -fPIC -shared{}",
                     cc && *cc ? cc : "cc", opt, openmp_flag());
}

namespace {
// The first line of `<cc> --version` (empty when it fails): one process started.
std::string run_version(const std::string& cc) {
  FILE* p = popen(fmt::format("{} --version 2>/dev/null", cc).c_str(), "r");
  if (!p) return "";
  char buf[256] = {0};
  std::string line = fgets(buf, sizeof buf, p) ? buf : "";
  const int rc = pclose(p);
  if (rc != 0) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// The compiler executable a plain command name runs (PATH searched, links resolved); empty for
// a command with arguments or one not found.
std::string resolve_compiler(const std::string& cc) {
  if (cc.find_first_of(" \t'\"") != std::string::npos) return "";
  std::error_code ec;
  auto real = [&](const fs::path& p) {
    return access(p.c_str(), X_OK) == 0 ? fs::canonical(p, ec).string() : std::string();
  };
  if (cc.find('/') != std::string::npos) return real(cc);
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t a = 0; a <= dirs.size();) {
    const std::size_t b = std::min(dirs.find(':', a), dirs.size());
    if (b > a)
      if (std::string r = real(fs::path(dirs.substr(a, b - a)) / cc); !r.empty() && !ec) return r;
    a = b + 1;
  }
  return "";
}
}  // namespace

// Cached beside the compiled objects under the compiler executable's identity (resolved path,
// size, modification time): a process with a warm cache starts no process to learn it, and a
// changed or upgraded compiler is asked again.
std::string compiler_version() {
  const char* e = std::getenv("JX_CC");
  const std::string cc = e && *e ? e : "cc";
  const std::string exe = resolve_compiler(cc);
  struct stat st {};
  if (exe.empty() || stat(exe.c_str(), &st) != 0) return run_version(cc);
  const fs::path file =
      fs::path(cache_dir()) /
      fmt::format("cc-{:016x}.version",
                  fnv1a(fmt::format("{}\n{}\n{}.{}", exe, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec)));
  {
    std::ifstream in(file);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
  }
  const std::string v = run_version(cc);
  if (v.empty()) return v;  // a failure is not cached: installing a compiler fixes it
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + fmt::format(".{}", getpid());
  {
    std::ofstream out(tmp);
    out << v << "\n";
    if (!out) return v;
  }
  fs::rename(tmp, file, ec);  // atomic: readers see the whole line or no file
  if (ec) fs::remove(tmp, ec);
  return v;
}

namespace {
std::shared_ptr<Library> load(const std::string& path, std::string& error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = e ? e : "unknown dlopen error";
    return nullptr;
  }
  return std::make_shared<Library>(h);
}
std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cache entry's digest: FNV-1a of the object's bytes and its size.
std::string digest(const std::string& bytes) { return fmt::format("{:016x} {}\n", fnv1a(bytes), bytes.size()); }

// Why the cached object cannot be used (empty: it can): no digest beside it (an entry from a
// process killed before it wrote one), or bytes that do not match it (truncated, corrupted).
std::string cache_entry_problem(const fs::path& so, const fs::path& sum) {
  if (!fs::exists(sum)) return "no digest";
  const std::string want = read_file(sum), got = digest(read_file(so));
  if (want != got)
    return fmt::format("digest mismatch (file {}, recorded {})", got.substr(0, got.size() - 1),
                       want.substr(0, want.find('\n')));
  return "";
}

}  // namespace

namespace {
// The object of `source` built by `cmd`, from the disk cache when a valid entry is there.
CompileResult compile_with(const std::string& cmd, const std::string& source) {
  const std::string key = fmt::format("{:016x}", fnv1a(cmd + "\n" + source));
  const fs::path dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw BackendError(fmt::format("native: cannot create the compile cache {}: {}", dir.string(), ec.message()));
  const fs::path so = dir / (key + ".so"), src = dir / (key + ".c"), sum = dir / (key + ".so.sum");
  std::string err, rejected;
  if (fs::exists(so)) {
    // a corrupted object could load and compute garbage: check its digest before dlopen
    rejected = cache_entry_problem(so, sum);
    if (rejected.empty()) {
      if (auto lib = load(so.string(), err)) return {lib, 0.0, true, so.string(), ""};
      rejected = "dlopen failed: " + err;
    }
    debug_log(1, fmt::format("native: cache entry {} rejected ({}); rebuilding", so.string(), rejected));
    fs::remove(so, ec);  // corrupted or truncated: rebuild below
    fs::remove(sum, ec);
  }
  const std::string tag = fmt::format("{}.{}", getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  const fs::path tmp_src = dir / (key + ".c." + tag), tmp_so = dir / (key + ".so." + tag),
                 log = dir / (key + ".log." + tag);
  {
    std::ofstream out(tmp_src);
    out << source;
    if (!out) throw BackendError(fmt::format("native: cannot write {}", tmp_src.string()));
  }
  fs::rename(tmp_src, src, ec);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string line =
      fmt::format("{} -o '{}' '{}' -lm > '{}' 2>&1", cmd, tmp_so.string(), src.string(), log.string());
  const int rc = std::system(line.c_str());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    const std::string output = read_file(log);
    fs::remove(log, ec);
    fs::remove(tmp_so, ec);
    throw BackendError(
        fmt::format("native: the C compiler failed ({}), source {}:\n{}", cmd, src.string(), output.substr(0, 4000)));
  }
  fs::remove(log, ec);
  const std::string object = read_file(tmp_so);
  fs::rename(tmp_so, so, ec);  // atomic: another process sees the whole file or none
  if (ec) throw BackendError(fmt::format("native: cannot install {}: {}", so.string(), ec.message()));
  {  // the digest last, also atomically: an entry without one is rebuilt
    const fs::path tmp_sum = dir / (key + ".so.sum." + tag);
    std::ofstream out(tmp_sum, std::ios::binary);
    out << digest(object);
    out.close();
    if (out) fs::rename(tmp_sum, sum, ec);
  }
  auto lib = load(so.string(), err);
  if (!lib) throw BackendError(fmt::format("native: cannot load {}: {}", so.string(), err));
  return {lib, ms, false, so.string(), rejected};
}
}  // namespace

// "-fopenmp" when the compiler builds and the loader loads an OpenMP object (probed once per
// process, through the disk cache: a process with a warm cache loads the probe and runs no
// compiler); empty with JX_NATIVE_OPENMP=0 or without OpenMP (the pragmas are then ignored).
// The probe stays loaded (RTLD_NODELETE), and with it the OpenMP runtime: its worker threads
// outlive any compiled object, and unloading the runtime under them (dlclose of the last
// object using it, e.g. after clear_caches()) would crash the process.
std::string openmp_flag() {
  static const std::string flag = [] {
    if (env_is_zero("JX_NATIVE_OPENMP")) return std::string();
    const char* cc = std::getenv("JX_CC");
    CompileResult cached;  // held until the copy below holds the OpenMP runtime: it never unloads
    try {
      cached = compile_with(
          fmt::format("{} -fopenmp -fPIC -shared", cc && *cc ? cc : "cc"),
          "void jx_probe(int n, int* a) {\n#pragma omp parallel for\n  for (int i = 0; i < n; ++i) a[i] = i;\n}\n");
    } catch (const BackendError& e) {
      debug_log(1, fmt::format("native: no OpenMP ({})", std::string(e.what()).substr(0, 200)));
      return std::string();
    }
    // what stays loaded is a private copy: the cache entry may be replaced or damaged while the
    // process runs, and mapped code must not change under it
    std::error_code ec;
    const fs::path copy = fs::temp_directory_path(ec) / fmt::format("jx-omp-probe-{}.so", getpid());
    fs::copy_file(cached.path, copy, fs::copy_options::overwrite_existing, ec);
    const bool ok = !ec && dlopen(copy.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != nullptr;
    fs::remove(copy, ec);
    return ok ? std::string(" -fopenmp") : std::string();
  }();
  return flag;
}

int openmp_threads() {
  if (env_is_zero("JX_NATIVE_OPENMP")) return 1;
  if (const char* e = std::getenv("OMP_NUM_THREADS"); e && *e) return std::max(1, std::atoi(e));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

CompileResult compile(const std::string& source) {
  dump_source(source, "c");
  return compile_with(compiler_command(source.size()), source);
}

}  // namespace jx::native
