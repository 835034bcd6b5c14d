// NoDestructor<T>: a function-local static that is constructed on first use and never
// destroyed, so process-wide singletons stay usable by threads still running at exit.
#pragma once

#include <new>
#include <utility>

namespace strata {

// Usage:  static NoDestructor<Registry> registry;  return *registry;
// Construction is thread safe (function-local static initialization); T's destructor never
// runs, so T should own nothing that must be released at exit.
template <typename T>
class NoDestructor {
 public:
  template <typename... Args>
  explicit NoDestructor(Args&&... args) {
    new (storage_) T(std::forward<Args>(args)...);
  }
  NoDestructor(const NoDestructor&) = delete;
  NoDestructor& operator=(const NoDestructor&) = delete;
  NoDestructor(NoDestructor&&) = delete;
  NoDestructor& operator=(NoDestructor&&) = delete;
  ~NoDestructor() = default;

  T* get() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  T& operator*() { return *get(); }
  T* operator->() { return get(); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace strata
