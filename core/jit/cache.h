#pragma once
// The caches of compiled programs: jit's LRU of programs (keyed by the printed jaxpr and the
// target, never by closure identity) and the eager one-equation programs of kernel-only backends
// (a small cache of their own: eager ops never evict jit programs).
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/jit/jit.h"
#include "core/jit/program.h"

namespace jx {

class ProgramCache {
 public:
  std::shared_ptr<const CompiledProgram> get(const std::string& key);
  void put(const std::string& key, std::shared_ptr<const CompiledProgram> p);
  void set_capacity(std::size_t n);
  std::size_t capacity() const;
  void clear();
  void stats(MemoryStats& s) const;

 private:
  void evict();
  using Item = std::pair<std::string, std::shared_ptr<const CompiledProgram>>;
  mutable std::mutex mu_;
  std::list<Item> lru_;
  std::unordered_map<std::string, std::list<Item>::iterator> map_;
  std::size_t cap_ = 256, hits_ = 0, misses_ = 0, evictions_ = 0;
};
ProgramCache& program_cache();  // immortal, like the backends

// Eager one-equation programs by key; cleared whole when it reaches 4096 entries.
class OpPrograms {
 public:
  std::shared_ptr<const CompiledProgram> get(const std::string& key);
  void put(const std::string& key, std::shared_ptr<const CompiledProgram> p);
  void clear();

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const CompiledProgram>> progs_;
};
OpPrograms& op_programs();  // immortal

// Both caches emptied (clear_caches, shutdown).
void clear_program_caches();

}  // namespace jx
