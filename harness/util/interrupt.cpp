#include "util/interrupt.h"

#include <csignal>

namespace recipebench {

namespace {
volatile std::sig_atomic_t g_interrupt = 0;
}  // namespace

int noted_interrupt() { return g_interrupt; }

void note_interrupt(int sig) { g_interrupt = sig; }

void clear_interrupt() { g_interrupt = 0; }

}  // namespace recipebench
