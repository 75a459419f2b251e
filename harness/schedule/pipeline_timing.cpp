#include "schedule/pipeline_timing.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "schedule/pipeline_receives.h"
#include "util/format.h"

namespace recipebench {

namespace {

using Kind = PipelineAction::Kind;

void check_seconds(double s, const std::string& what) {
  if (!(s >= 0) || std::isinf(s))
    throw std::invalid_argument("pipeline timing: " + what + " " + shortest(s) + " s, expected finite >= 0");
}

void check_table(const std::vector<std::vector<double>>& t, int pp, int vpp, const std::string& what) {
  if (static_cast<int>(t.size()) != pp)
    throw std::invalid_argument("pipeline timing: " + what + " durations for " + std::to_string(t.size()) +
                                " ranks, expected PP " + std::to_string(pp));
  for (int r = 0; r < pp; ++r) {
    if (static_cast<int>(t[r].size()) != vpp)
      throw std::invalid_argument("pipeline timing: " + what + " durations of rank " + std::to_string(r) + ": " +
                                  std::to_string(t[r].size()) + " chunks, expected VPP " + std::to_string(vpp));
    for (int c = 0; c < vpp; ++c)
      check_seconds(t[r][c], what + " of rank " + std::to_string(r) + " chunk " + std::to_string(c));
  }
}

void check_options(const PipelineTimingOptions& o, int pp) {
  check_seconds(o.p2p_seconds, "p2p time");
  if (!o.link_p2p_seconds.empty() && static_cast<int>(o.link_p2p_seconds.size()) != pp)
    throw std::invalid_argument("pipeline timing: " + std::to_string(o.link_p2p_seconds.size()) +
                                " link p2p times, expected PP " + std::to_string(pp));
  for (size_t i = 0; i < o.link_p2p_seconds.size(); ++i)
    check_seconds(o.link_p2p_seconds[i], "p2p time of link " + std::to_string(i));
}

/// The step as it is being played: every pass's end (negative until it ran) and each rank's place.
struct Play {
  int pp = 1, vpp = 1;
  int64_t stages = 1;
  std::vector<double> end[2];  ///< [forward, backward][microbatch x stages + global stage]
  std::vector<std::vector<PipelineAction>> orders;
  std::vector<size_t> next;
  std::vector<double> free;  ///< [rank]: when its last pass ended
  /// With overlap_p2p, [rank][action]: the action after whose receive's wait this action's receive is posted (the
  /// executor's receive plan, schedule/pipeline_receives.h); -1 when the pass posts its own receive (the first of its
  /// link) or has none.
  std::vector<std::vector<int64_t>> post_after;
  std::vector<std::vector<double>> started;  ///< [rank][action]: when it started (-1 before)

  double& at(Kind k, int64_t m, int64_t g) { return end[k == Kind::Forward ? 0 : 1][size_t(m * stages + g)]; }
};

/// What a pass waits for: a pass of its own rank (no transfer) and one of a neighbour with the link's time.
struct Inputs {
  bool ready = true;  ///< every input has run
  double local = 0;   ///< end of the rank's own input pass (0 when none)
  bool remote = false;
  double remote_end = 0, p2p = 0;
};

double link_seconds(const PipelineTimingOptions& o, int link) {
  return o.link_p2p_seconds.empty() ? o.p2p_seconds : o.link_p2p_seconds[size_t(link)];
}

Inputs inputs_of(Play& p, const PipelineAction& a, int64_t g, const PipelineTimingOptions& o) {
  Inputs in;
  auto remote = [&](double e, int link) {
    in.remote = true;
    in.remote_end = e;
    in.p2p = link_seconds(o, link);
    if (e < 0) in.ready = false;
  };
  if (a.kind == Kind::Forward) {
    if (g > 0) remote(p.at(Kind::Forward, a.microbatch, g - 1), int((g - 1) % p.pp));
    return in;
  }
  in.local = p.at(Kind::Forward, a.microbatch, g);
  if (in.local < 0) in.ready = false;
  if (g < p.stages - 1) remote(p.at(Kind::Backward, a.microbatch, g + 1), int(g % p.pp));
  return in;
}

/// Runs rank r's next pass when its inputs have run; false when it must wait (or has nothing left).
bool step_rank(Play& p, int r, const PassDurations& d, const PipelineTimingOptions& o, PipelineTiming& out) {
  if (p.next[r] >= p.orders[r].size()) return false;
  const PipelineAction& a = p.orders[r][p.next[r]];
  const int64_t g = int64_t{a.chunk} * p.pp + r;
  const Inputs in = inputs_of(p, a, g, o);
  if (!in.ready) return false;
  const double sent = std::max({p.free[r], in.local, in.remote ? in.remote_end : 0.0});
  double start = sent;
  const int64_t posted_after = o.overlap_p2p ? p.post_after[r][p.next[r]] : -1;
  if (in.remote && posted_after >= 0) {  // posted ahead: the transfer runs once posted and sent, behind compute
    const double posted = p.started[r][size_t(posted_after)];
    start = std::max({p.free[r], in.local, std::max(posted, in.remote_end) + in.p2p});
  } else if (in.remote) {  // posted by its own pass: the rank waits all of the transfer
    start = std::max(std::max(p.free[r], in.remote_end) + in.p2p, in.local);
  }
  const double duration = (a.kind == Kind::Forward ? d.forward : d.backward)[size_t(r)][size_t(a.chunk)];
  p.at(a.kind, a.microbatch, g) = start + duration;
  if (o.overlap_p2p) p.started[r][p.next[r]] = start;
  p.free[r] = start + duration;
  out.busy_seconds[r] += duration;
  out.p2p_wait_seconds[r] += start - sent;
  if (o.keep_actions) out.actions.push_back({r, int(g), a, start, start + duration});
  ++p.next[r];
  return true;
}

/// The count of the first of the three plays of the steady state: past the warm-up (4 x PP x VPP + 64), of the
/// same residue modulo the period (PP) as `microbatches`.
int64_t steady_base(int pp, int vpp, int64_t microbatches) {
  const int64_t period = std::max(pp, 1), warm = 4 * int64_t{std::max(pp, 1)} * std::max(vpp, 1) + 64;
  return warm - warm % period + microbatches % period + period;
}

/// Whether b - a and c - b are one increment (relative to the larger magnitude, 1e-9: rounding of sums of passes).
bool same_increment(double a, double b, double c) {
  const double scale = std::max({std::fabs(a), std::fabs(b), std::fabs(c), 1e-30});
  return std::fabs((c - b) - (b - a)) <= 1e-9 * scale;
}

/// The timing of `microbatches` from three plays a period apart (`a`, `b`, `c` at base, base + period, base + 2
/// periods), or nullopt when they do not show one increment per period.
std::optional<PipelineTiming> carried(const PipelineTiming& a, const PipelineTiming& b, const PipelineTiming& c,
                                      double periods) {
  if (!same_increment(a.step_seconds, b.step_seconds, c.step_seconds)) return std::nullopt;
  PipelineTiming out;
  out.step_seconds = c.step_seconds + periods * (c.step_seconds - b.step_seconds);
  for (size_t r = 0; r < c.busy_seconds.size(); ++r) {
    if (!same_increment(a.p2p_wait_seconds[r], b.p2p_wait_seconds[r], c.p2p_wait_seconds[r]) ||
        !same_increment(a.end_seconds[r], b.end_seconds[r], c.end_seconds[r]))
      return std::nullopt;
    out.end_seconds.push_back(c.end_seconds[r] + periods * (c.end_seconds[r] - b.end_seconds[r]));
    out.busy_seconds.push_back(c.busy_seconds[r] + periods * (c.busy_seconds[r] - b.busy_seconds[r]));
    out.p2p_wait_seconds.push_back(c.p2p_wait_seconds[r] + periods * (c.p2p_wait_seconds[r] - b.p2p_wait_seconds[r]));
    out.idle_seconds.push_back(out.step_seconds - out.busy_seconds[r]);
  }
  return out;
}

/// The executor's receive plan of every rank (kPipelineReceivesAhead per link in flight) into p.post_after.
void plan_receives(Play& p, int64_t microbatches) {
  for (int r = 0; r < p.pp; ++r) {
    std::vector<int64_t>& after = p.post_after.emplace_back(p.orders[size_t(r)].size(), -1);
    p.started.emplace_back(p.orders[size_t(r)].size(), -1.0);
    for (const PipelineReceive& rc : pipeline_receive_plan(p.pp, p.vpp, r, microbatches, kPipelineReceivesAhead))
      if (rc.ahead) after[size_t(rc.action)] = rc.post_after;
  }
}

}  // namespace

PassDurations uniform_pass_durations(int pp, int vpp, double forward_s, double backward_s) {
  PassDurations d;
  d.forward.assign(size_t(std::max(pp, 0)), std::vector<double>(size_t(std::max(vpp, 0)), forward_s));
  d.backward.assign(size_t(std::max(pp, 0)), std::vector<double>(size_t(std::max(vpp, 0)), backward_s));
  return d;
}

PipelineTiming play_pipeline(int pp, int vpp, int64_t microbatches, const PassDurations& durations,
                             const PipelineTimingOptions& options) {
  Play p;
  for (int r = 0; r < std::max(pp, 1); ++r) p.orders.push_back(pipeline_schedule(pp, vpp, r, microbatches));
  check_table(durations.forward, pp, vpp, "forward");
  check_table(durations.backward, pp, vpp, "backward");
  check_options(options, pp);
  p.pp = pp;
  p.vpp = vpp;
  p.stages = int64_t{pp} * vpp;
  for (auto& e : p.end) e.assign(size_t(microbatches * p.stages), -1.0);
  p.next.assign(size_t(pp), 0);
  p.free.assign(size_t(pp), 0.0);
  if (options.overlap_p2p) plan_receives(p, microbatches);
  PipelineTiming out;
  out.busy_seconds.assign(size_t(pp), 0.0);
  out.p2p_wait_seconds.assign(size_t(pp), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < pp; ++r)
      while (step_rank(p, r, durations, options, out)) progress = true;
  }
  for (int r = 0; r < pp; ++r)
    if (p.next[r] < p.orders[r].size())  // never for the project's schedules (tests/test_pipeline_schedule.cpp)
      throw std::logic_error("pipeline timing: the schedule does not complete: " +
                             pipeline_schedule_runs(pp, vpp, p.orders, microbatches));
  for (int r = 0; r < pp; ++r) out.step_seconds = std::max(out.step_seconds, p.free[r]);
  out.end_seconds = p.free;
  for (int r = 0; r < pp; ++r) out.idle_seconds.push_back(out.step_seconds - out.busy_seconds[r]);
  std::stable_sort(out.actions.begin(), out.actions.end(),
                   [](const TimedPipelineAction& x, const TimedPipelineAction& y) { return x.rank < y.rank; });
  return out;
}

int64_t pipeline_played_microbatches(int pp, int vpp) { return steady_base(pp, vpp, 0) + 2 * int64_t{std::max(pp, 1)}; }

PipelineTiming time_pipeline(int pp, int vpp, int64_t microbatches, const PassDurations& durations,
                             const PipelineTimingOptions& options) {
  if (options.keep_actions || pp < 1 || vpp < 1 || microbatches <= pipeline_played_microbatches(pp, vpp))
    return play_pipeline(pp, vpp, microbatches, durations, options);
  (void)pipeline_warmup(pp, vpp, 0, microbatches);  // the schedule's own checks, as play_pipeline makes them
  const int64_t period = pp, base = steady_base(pp, vpp, microbatches);
  const PipelineTiming a = play_pipeline(pp, vpp, base, durations, options);
  const PipelineTiming b = play_pipeline(pp, vpp, base + period, durations, options);
  const PipelineTiming c = play_pipeline(pp, vpp, base + 2 * period, durations, options);
  const double periods = static_cast<double>((microbatches - base - 2 * period) / period);
  if (std::optional<PipelineTiming> out = carried(a, b, c, periods)) return *out;
  if (microbatches <= kPipelineMaxPlayed) return play_pipeline(pp, vpp, microbatches, durations, options);
  throw std::invalid_argument("pipeline timing: " + std::to_string(microbatches) +
                              " microbatches per step, and the schedule shows no steady state after " +
                              std::to_string(base) + "; expected at most " + std::to_string(kPipelineMaxPlayed) +
                              " microbatches");
}

}  // namespace recipebench
