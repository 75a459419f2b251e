// The pipeline's point-to-point groups: one per kind of traffic (activations, gradients) and direction.
#pragma once

namespace recipebench::dist {

class ProcessGroup;

/// The pipeline's point-to-point groups, one per kind of traffic and direction (pipeline/pipeline_executor.h): on NCCL
/// with PP > 1 the run's group carries the activations towards higher pipeline ranks and three more groups of all
/// ranks the rest; null elsewhere (Gloo matches by tag: the run's group carries everything). NCCL (unlike Gloo) runs
/// a pair's sends and receives on one communicator in issue order and a send waits for its receive, so each
/// communicator carries one kind in one direction, whose order both sides share (microbatches in schedule order);
/// mixed, two ranks can wait on each other (seen with PP 2 VPP 2).
struct PipelineLinks {
  ProcessGroup* activations_to_higher = nullptr;  ///< forward pass, towards a higher pipeline rank
  ProcessGroup* activations_to_lower = nullptr;   ///< forward pass, the interleaved schedule's wrap-around
  ProcessGroup* gradients_to_higher = nullptr;    ///< backward pass, the interleaved schedule's wrap-around
  ProcessGroup* gradients_to_lower = nullptr;     ///< backward pass, towards a lower pipeline rank
  /// The group of a send or receive of gradients (else activations) towards a higher (else lower) pipeline rank;
  /// null when the run's group carries it.
  ProcessGroup* of(bool gradient, bool to_higher) const {
    if (gradient) return to_higher ? gradients_to_higher : gradients_to_lower;
    return to_higher ? activations_to_higher : activations_to_lower;
  }
};

}  // namespace recipebench::dist
