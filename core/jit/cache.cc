#include "core/jit/cache.h"

#include "core/instrument/instrument.h"
#include "core/replay/policy.h"

namespace jx {

std::shared_ptr<const CompiledProgram> ProgramCache::get(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ProgramCache::put(const std::string& key, std::shared_ptr<const CompiledProgram> p) {
  std::lock_guard lock(mu_);
  if (auto it = map_.find(key); it != map_.end()) lru_.erase(it->second);
  lru_.emplace_front(key, std::move(p));
  map_[key] = lru_.begin();
  evict();
}

void ProgramCache::set_capacity(std::size_t n) {
  std::lock_guard lock(mu_);
  cap_ = n;
  evict();
}

std::size_t ProgramCache::capacity() const {
  std::lock_guard lock(mu_);
  return cap_;
}

void ProgramCache::clear() {
  std::lock_guard lock(mu_);
  lru_.clear();
  map_.clear();
}

void ProgramCache::stats(MemoryStats& s) const {
  std::lock_guard lock(mu_);
  s.jit_cache_entries = map_.size();
  s.cache_hits = hits_;
  s.cache_misses = misses_;
  s.cache_evictions = evictions_;
}

void ProgramCache::evict() {
  if (replay::policy().identity_keyed_unbounded_cache) return;  // replay: never evicts
  while (map_.size() > cap_) {
    trace::emit({trace::EventKind::cache_evict, "", lru_.back().first.substr(0, 60), 0, false, 0.0, {}});
    map_.erase(lru_.back().first);
    lru_.pop_back();
    ++evictions_;
  }
}

ProgramCache& program_cache() {
  static ProgramCache* c = new ProgramCache();  // immortal, like the backends
  return *c;
}

std::shared_ptr<const CompiledProgram> OpPrograms::get(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = progs_.find(key);
  return it == progs_.end() ? nullptr : it->second;
}

void OpPrograms::put(const std::string& key, std::shared_ptr<const CompiledProgram> p) {
  std::lock_guard lock(mu_);
  if (progs_.size() >= 4096) progs_.clear();
  progs_.emplace(key, std::move(p));
}

void OpPrograms::clear() {
  std::lock_guard lock(mu_);
  progs_.clear();
}

OpPrograms& op_programs() {
  static OpPrograms* p = new OpPrograms();  // immortal, like the program cache
  return *p;
}

void clear_program_caches() {
  program_cache().clear();
  op_programs().clear();
}

}  // namespace jx
