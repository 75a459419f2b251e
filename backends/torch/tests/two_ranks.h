// Two ranks of one Gloo group as threads of the test process, for the torch tests of collectives (EP, TP, the
// overlapped gradient reduce-scatter).
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"
#include "launch/launch.h"

namespace rbt_test {

/// Runs body(rank, group) on ranks 0 and 1 (threads) of one Gloo group on a free loopback port, with a 60 s
/// collective timeout; with `finish`, each rank ends its group cleanly (ProcessGroup::finish) after its body.
/// Both ranks meet at a barrier before their bodies: a body that throws at once (a refusal) closes its rank's group,
/// which would otherwise cut off a peer still connecting ("Connection closed by peer"). Returns each rank's
/// exception message, "" where none.
inline std::vector<std::string> on_two_ranks(const std::function<void(int, recipebench::dist::ProcessGroup&)>& body,
                                             bool finish = false) {
  const int port = recipebench::free_loopback_port();
  std::vector<std::string> errors(2);
  auto rank_main = [&](int r) {
    try {
      recipebench::dist::ProcessGroup pg(r, 2, "127.0.0.1", port, std::chrono::seconds(60));
      pg.barrier();
      body(r, pg);
      if (finish) pg.finish();
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(r)] = e.what();
    }
  };
  std::thread t1(rank_main, 1);
  rank_main(0);
  t1.join();
  return errors;
}

}  // namespace rbt_test
