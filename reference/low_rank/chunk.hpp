// ruleproof: what the chunkwise forms of the low-rank rules (dplr, iplr, gated_oja) share
// beside the chunk machinery of every rule (reference/shared/): a chunkwise forward's outputs
// with its stage intermediates, and the parallel form as one chunk as long as the sequence.
#pragma once

#include <algorithm>

#include "../core/heads.hpp"
#include "../shared/chunk.hpp"

namespace ruleproof::low_rank {

using shared::chunk_local_cumsum;
using shared::chunk_local_cumsum_reverse;
using shared::solve_tril;

/// \brief One head's chunkwise forward: its outputs and the stage intermediates (the rule's
/// `ChunkStages`) a kernel is checked against, stage by stage.
template <class S, class Stages> struct ChunkForward {
  HeadOutput<S> out;
  Stages stages;
};

/// \brief One head, parallel form: the whole sequence as one chunk of the rule's chunkwise
/// form `chunk_head(x, scale, C)`, so every decay pair is taken in log space where the
/// exponent range of S requires it.
template <Scalar S, class ChunkHead>
HeadOutput<S> whole_sequence_as_one_chunk(const Head<S> &x, const S &scale, ChunkHead chunk_head) {
  return chunk_head(x, scale, std::max<std::size_t>(1, static_cast<std::size_t>(x.q.rows())));
}

} // namespace ruleproof::low_rank
