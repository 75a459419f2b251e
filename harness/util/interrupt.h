// The interrupt flag: the signal (SIGINT, SIGTERM) a handler noted, polled by any layer between units of work (a
// run's steps, a log's lines) so that a command stops within a unit of SIGINT or SIGTERM. The handlers are the run
// guard's (launch/run_guard.h watch_interrupts); this is only where they write.
#pragma once

namespace recipebench {

/// The signal noted since the last clear_interrupt(), 0 when none.
int noted_interrupt();

/// Notes `sig` (async-signal-safe: a handler calls it).
void note_interrupt(int sig);

/// Forgets a signal noted before (by an earlier run in this process).
void clear_interrupt();

}  // namespace recipebench
