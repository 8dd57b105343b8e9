#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace jx::native {

// A loaded shared object; unloaded when the last executable using it is released.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* symbol(const std::string& name) const;  // throws BackendError

 private:
  void* handle_;
};

struct CompileResult {
  std::shared_ptr<Library> lib;
  double ms = 0.0;  // compiler wall time (0 when loaded from the disk cache)
  bool from_disk = false;
  std::string path;      // the .so
  std::string rejected;  // why a cached object was deleted and rebuilt (empty: none was)
};

// JX_NATIVE_CACHE, else $XDG_CACHE_HOME/jxlab/native, else $HOME/.cache/jxlab/native.
std::string cache_dir();
// JX_CC (default "cc") with the fixed flags (-O3, or -O1 above kLargeSource bytes of C); part
// of the cache key.
inline constexpr std::size_t kLargeSource = 256 * 1024;
std::string compiler_command(std::size_t source_bytes = 0);
// " -fopenmp" when the compiler and loader support OpenMP (probed once), else empty; also empty
// with JX_NATIVE_OPENMP=0. Threads: OMP_NUM_THREADS, default one per core.
std::string openmp_flag();
// The threads OpenMP starts for native code: OMP_NUM_THREADS's first count, else one per core;
// 1 with JX_NATIVE_OPENMP=0.
int openmp_threads();
// The compiler's first --version line, or empty when it cannot run.
std::string compiler_version();

// Compiles C source to a shared object cached on disk by the hash of (command, source): a
// second process reuses it. Each object has a digest beside it (KEY.so.sum: FNV-1a and size);
// a cached object without one, not matching it, or failing to load is deleted and rebuilt.
CompileResult compile(const std::string& source);

}  // namespace jx::native
