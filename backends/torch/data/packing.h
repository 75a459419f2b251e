// Dynamic batching: rows of different lengths packed first-fit into microbatches of at most max_tokens_per_gpu
// tokens (docs/layout-arithmetic.md, "Microbatches"). No libtorch here: rows are indices, the backend builds the
// tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace recipebench::train {

/// A microbatch: the indices of its rows, in the order they were given. It is trained as one [rows, longest]
/// tensor, each row right-padded to the longest (the padding carries no loss and, the model being causal, does
/// not change the other tokens' outputs).
using Microbatch = std::vector<int64_t>;

/// The tokens a microbatch occupies on the GPU: rows x its longest row (padding included).
int64_t padded_tokens(const Microbatch& mb, const std::vector<int64_t>& lengths);

/// First-fit packing: rows are taken in order; each goes into the first microbatch that still holds it within
/// `max_tokens` padded tokens ((rows + 1) x max(longest, length) <= max_tokens), else opens a new microbatch.
/// With every row max_tokens / k tokens long this gives microbatches of k rows (docs/layout-arithmetic.md's fixed
/// count). lengths: tokens of each row (> 0). Throws std::invalid_argument when a row is longer than max_tokens
/// or a length is not positive.
std::vector<Microbatch> pack_first_fit(const std::vector<int64_t>& lengths, int64_t max_tokens);

/// Splits microbatches until there are `count` of them: each split halves (first half keeps the extra row) the
/// microbatch with the most rows (the first such), which never raises a microbatch's padded tokens. Used so that
/// every rank of a run trains the same number of microbatches (the expert all-to-all and the pipeline schedule
/// need it). Throws std::invalid_argument when count is below the current number or above the number of rows.
void split_to_count(std::vector<Microbatch>& mbs, int64_t count);

}  // namespace recipebench::train
