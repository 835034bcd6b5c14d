// Mutex, MutexLock and CondVar with Clang thread-safety annotations, so `-Wthread-safety`
// checks that fields marked STRATA_GUARDED_BY(mu_) are only touched with mu_ held.
// (libstdc++'s std::mutex carries no annotations, so it cannot be named in GUARDED_BY.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define STRATA_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define STRATA_THREAD_ANNOTATION_(x)
#endif

#define STRATA_CAPABILITY(x) STRATA_THREAD_ANNOTATION_(capability(x))
#define STRATA_SCOPED_CAPABILITY STRATA_THREAD_ANNOTATION_(scoped_lockable)
#define STRATA_GUARDED_BY(x) STRATA_THREAD_ANNOTATION_(guarded_by(x))
#define STRATA_PT_GUARDED_BY(x) STRATA_THREAD_ANNOTATION_(pt_guarded_by(x))
#define STRATA_REQUIRES(...) STRATA_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define STRATA_ACQUIRE(...) STRATA_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define STRATA_RELEASE(...) STRATA_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define STRATA_TRY_ACQUIRE(...) STRATA_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define STRATA_EXCLUDES(...) STRATA_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define STRATA_ACQUIRED_AFTER(...) STRATA_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define STRATA_ASSERT_CAPABILITY(x) STRATA_THREAD_ANNOTATION_(assert_capability(x))
#define STRATA_REQUIRES_SHARED(...) \
  STRATA_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define STRATA_ACQUIRE_SHARED(...) STRATA_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define STRATA_RELEASE_SHARED(...) STRATA_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define STRATA_RELEASE_GENERIC(...) \
  STRATA_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define STRATA_NO_THREAD_SAFETY_ANALYSIS STRATA_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace strata {

// A non-recursive exclusive lock. Prefer MutexLock over calling Lock/Unlock directly.
class STRATA_CAPABILITY("mutex") Mutex {
 public:
  void Lock() STRATA_ACQUIRE() { mutex_.lock(); }
  void Unlock() STRATA_RELEASE() { mutex_.unlock(); }
  bool TryLock() STRATA_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // Tells the analysis the lock is held where it cannot see the acquisition (no runtime check).
  void AssertHeld() const STRATA_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds `mutex` for the enclosing scope.
class STRATA_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) STRATA_ACQUIRE(mutex) : mutex_(mutex) { mutex_.Lock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  MutexLock(MutexLock&&) = delete;
  MutexLock& operator=(MutexLock&&) = delete;
  ~MutexLock() STRATA_RELEASE() { mutex_.Unlock(); }

 private:
  Mutex& mutex_;
};

// Many readers or one writer. Hold it with ReaderLock / WriterLock.
class STRATA_CAPABILITY("shared mutex") SharedMutex {
 public:
  void Lock() STRATA_ACQUIRE() { mutex_.lock(); }
  void Unlock() STRATA_RELEASE() { mutex_.unlock(); }
  void LockShared() STRATA_ACQUIRE_SHARED() { mutex_.lock_shared(); }
  void UnlockShared() STRATA_RELEASE_SHARED() { mutex_.unlock_shared(); }

 private:
  std::shared_mutex mutex_;
};

// Holds `mutex` exclusively for the enclosing scope.
class STRATA_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mutex) STRATA_ACQUIRE(mutex) : mutex_(mutex) { mutex_.Lock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock() STRATA_RELEASE() { mutex_.Unlock(); }

 private:
  SharedMutex& mutex_;
};

// Holds `mutex` shared for the enclosing scope.
class STRATA_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mutex) STRATA_ACQUIRE_SHARED(mutex) : mutex_(mutex) {
    mutex_.LockShared();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;
  ~ReaderLock() STRATA_RELEASE_GENERIC() { mutex_.UnlockShared(); }

 private:
  SharedMutex& mutex_;
};

// A condition variable used with a strata::Mutex. Waits may wake spuriously: always wait in a
// loop that re-checks the condition (written out, so the analysis sees the guarded reads):
//   while (!ready_) cv_.Wait(mu_);
class CondVar {
 public:
  // Atomically releases `mutex`, waits for a signal, and re-acquires `mutex`.
  void Wait(Mutex& mutex) STRATA_REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // Ownership stays with the caller.
  }

  // As Wait, but also returns after `timeout` (real time). Returns false on timeout.
  bool WaitFor(Mutex& mutex, std::chrono::nanoseconds timeout) STRATA_REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    const bool signalled = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace strata
