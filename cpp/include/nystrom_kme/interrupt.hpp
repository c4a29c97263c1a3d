// Stopping long computations early. The caller installs one process-wide check
// (the Python module runs Python's signal handlers, so Ctrl-C raises
// KeyboardInterrupt; a native application may poll a flag of its own). Long
// loops call it from the thread that started them, at most every 20 ms, and
// throw Interrupted when it says stop: other threads finish their current piece
// and no further, memory is released by the usual unwinding.
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace nystrom_kme {

/// Thrown by a computation that the installed interrupt check stopped.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("nystrom_kme: computation interrupted") {}
};

/// Returns true when the running computation should stop. Called only from the
/// thread that started the computation.
using InterruptCheck = bool (*)();

inline std::atomic<InterruptCheck>& interrupt_check_slot() {
  static std::atomic<InterruptCheck> slot{nullptr};
  return slot;
}

/// Installs the process-wide interrupt check (nullptr removes it).
inline void set_interrupt_check(InterruptCheck check) { interrupt_check_slot().store(check); }

namespace detail {

/// One computation's poller: poll() from the starting thread as often as is
/// convenient; it runs the check at most every `period` and throws Interrupted.
class InterruptPoller {
 public:
  using Clock = std::chrono::steady_clock;
  explicit InterruptPoller(Clock::duration period = std::chrono::milliseconds(20))
      : check_(interrupt_check_slot().load()), period_(period), next_(Clock::now() + period) {}

  void poll() {
    if (!check_) return;
    const Clock::time_point now = Clock::now();
    if (now < next_) return;
    next_ = now + period_;
    if (check_()) throw Interrupted();
  }

 private:
  InterruptCheck check_;
  Clock::duration period_;
  Clock::time_point next_;
};

}  // namespace detail
}  // namespace nystrom_kme
