// ruleproof: the GPU kernels checked against the float128 truth and their emulated twin
// (gpu/twin.hpp), shared by the GPU property tests (gpu/tests/) and `ruleproof gpu-check`.
//
// The verdict on one output (judge): on one input, stored as the kernel receives it,
//   kernel_error = max_i |kernel_i - truth_i|,  twin_error = max_i |twin_i - truth_i|,
//   floor = (sqrt(n) u_fp32 + u) max_i |truth_i|  (the sqrt(n) fp32 roundings of a sum of n
//           terms, the probabilistic size of rounding in an n-term fp32 sum: summed_terms; then,
//           for an output stored in 16 bits, its one rounding to that type, u its unit roundoff:
//           what no kernel storing it can avoid; for the scores under a policy that rounds
//           product operands, plus the roundings of their factors: operand_floor; for dg,
//           whose sums cancel, the sqrt(n) roundings are of the size of its terms where that is
//           larger than max_i |truth_i|: gate_gradient_terms),
//   allowed = twin_factor max(twin_error, floor),
// and the output passes when every element is finite (outputs are poisoned with NaN before
// the launch, so an element never written fails) and kernel_error <= allowed. The truth is
// the reference chunkwise form in float128 on the same stored inputs (so the error counts
// the kernels' arithmetic and stores, not the rounding of the inputs, which kernel and twin
// share), read back as double for the comparison (34 digits rounded to 16: far below the fp32
// errors measured).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernel_rule.hpp"
#include "reference/core/inputs.hpp"
#include "reference/core/validate.hpp"
#include "rounding.hpp"
#include "twin.hpp"

namespace ruleproof::gpu::check {

/// \brief The stated factor: a kernel may show this many times the twin's error. The kernel
/// and the twin compute the same sums in fp32 in different orders (the twin: the reference's
/// factored decays and Eigen's blocked products; the kernel: pairwise decays and plain loops),
/// so their rounding errors have the same bounds but not the same values; 4 leaves two bits
/// for that difference and nothing for a wrong term. gpu/tests/twin_tests.cpp checks on the
/// CPU that another fp32 order of the same algorithm (the reference at chunk sizes 16 and 32)
/// passes, and that planted bugs do not.
constexpr double twin_factor = 4;

/// \brief One drawn case: shapes and options, values from a seed (draw()).
struct Case {
  KernelRule rule = KernelRule::gla;
  DType storage = DType::bf16; ///< q, k, v, do and o, dq, dk, dv: bf16 or fp16
  std::size_t B = 1, T = 1, H = 1, K = 64, V = 64;
  std::vector<std::int64_t> cu_seqlens; ///< varlen (B == 1) when not empty
  bool has_h0 = false, output_final_state = true, has_dht = false;
  double gate_scale = 1; ///< g = -gate_scale u, u uniform in (0, 1]
  /// k = key_scale u for the rules whose keys are not unit rows (all but the delta rules): keys
  /// past fp16's factored range (gpu/detail/gla_tc.cuh, spread_limit_for)
  double key_scale = 1;
  std::uint64_t seed = 0;
  std::size_t split = 0; ///< causality: the inputs of rows t >= split are redrawn
  KernelPath path = KernelPath::cuda_cores; ///< which kernels run it (kernel_rule.hpp)
  std::size_t sequences() const { return cu_seqlens.empty() ? B : cu_seqlens.size() - 1; }
  std::string describe() const;
};

/// \brief The values of a case, rounded as the kernel receives them (twin.hpp, as_stored):
/// q, k, v, do, h0, dht uniform in [-1, 1] (k times key_scale), except the delta rules' keys,
/// each row scaled to
/// unit norm (flash-linear-attention's l2-normalised keys; the rules' domain, ||k|| <= 1, keeps
/// I - beta k k^T a contraction), and gated_oja's values likewise (I - beta v v^T); beta
/// uniform in (0, 1]; dplr_fla's a and b uniform rows scaled to unit norm (the reference's
/// domain, rows of norm <= 1); opts.scale = K^-1/2, chunk size 64.
struct Drawn {
  Inputs<float> in;
  Cotangents<float> ct;
  Options opts;
};
Drawn draw(const Case &c);

/// \brief The policy the project's CUDA-core kernels are judged under (gpu/twin.hpp): every
/// product on CUDA cores in fp32, every stage stored in fp32.
inline constexpr Policy kernels_policy = Policy::fp32;

/// \brief The policy a case's forward is judged under: that of the kernels that run it, the
/// tensor-core policy where c.path asks for tensor cores and the rule has a tensor-core forward,
/// else kernels_policy.
inline Policy forward_policy(const Case &c) {
  return c.path == KernelPath::tensor_cores && has_tensor_core_forward(c.rule) ? Policy::tensor_core
                                                                               : kernels_policy;
}
/// The policy a case's backward is judged under, as forward_policy's: the tensor-core policy
/// where c.path asks for tensor cores and the rule has a tensor-core backward.
inline Policy backward_policy(const Case &c) {
  return c.path == KernelPath::tensor_cores && has_tensor_core_backward(c.rule)
             ? Policy::tensor_core
             : kernels_policy;
}

/// \brief The verdict on one output (see the top of this file).
struct Verdict {
  std::string output;
  DType stored = DType::fp32; ///< the type the kernel stores this output in
  double roundoff = 0;        ///< u of the floor: the unit roundoff of `stored`
  std::size_t elements = 0;
  bool finite = true;
  std::size_t worst_index = 0; ///< the worst element, or the first non-finite one
  double truth_max = 0, kernel_error = 0, twin_error = 0, floor = 0, allowed = 0;
  double operand_floor = 0; ///< the part of the floor from product operands' roundings
  double term_size = 0;     ///< the size of the terms each element sums (gate_gradient_terms)
  /// Root mean squares over the elements: of the truth, of the kernel's and the twin's errors
  /// (kernel_rms / truth_rms is flash-linear-attention's error ratio).
  double truth_rms = 0, kernel_rms = 0, twin_rms = 0;
  double kernel_value = 0, truth_value = 0, twin_value = 0;
  bool holds() const { return finite && kernel_error <= allowed; }
  /// kernel_error / allowed (<= 1 holds); infinite when not finite.
  double ratio() const;
  std::string summary() const;
};

/// \brief The verdict on one output; all three tensors of one shape (else not finite).
/// `summed_terms`: how many terms each element of the output sums in fp32 (dg: a reverse
/// cumulative sum over the sequence). The floor of the allowed error then holds sqrt(summed_terms)
/// fp32 roundings of the largest entry, the probabilistic size of rounding in an n-term sum
/// (Higham and Mary, 2019), besides its one rounding to the stored type: the twin's own error on
/// one input can fall far below it by chance, and a correct kernel summing in another order
/// must not fail for that.
/// `operand_floor` (operand_floor()) is added to the floor as it stands: the size of the
/// roundings of the factors of the output's products, where the policy rounds them.
/// `term_size` (gate_gradient_terms()), where the output's sums can cancel: the sqrt(summed_terms)
/// fp32 roundings are of the larger of the terms' size and the largest entry.
Verdict judge(const std::string &output, DType stored, const Tensor<float> &kernel,
              const Tensor<float> &twin, const Tensor<double> &truth, std::size_t summed_terms = 1,
              double operand_floor = 0, double term_size = 0);

/// \brief The size of the terms the gate's gradient dg sums, for judge's term_size: the largest,
/// over every gate column and every row t, of sum |x_s dx_s| over the rows s >= t of t's scope
/// (its chunk where dg is a suffix sum inside each chunk, its sequence for gla and simple_gla),
/// for the pairs of an input and its gradient that the gate's factors multiply: q and k (and
/// dplr_fla's a and b) for a gate over the keys, per key, or summed over the keys for a scalar
/// gate; o and v for gated_oja's gate over the values, per value. The states' products are
/// added where the scope meets them: |h0 dh0| at the sequence's start, |h_T dh_T| at its end (each
/// reduced over the other side of the state). dx: the truth's gradients; o and h_T: the reference
/// in double. The states' products at chunk ends inside a sequence are not counted.
///
/// dg's sums cancel: a row whose gate reaches nothing (the first row of a sequence without an
/// initial state) has dg exactly 0, summed from terms such as q . dq and k . dk of a size far
/// from 0. On one such case of one row (gated_delta_rule, kda, gated_oja, CUDA-core kernels) the
/// twin's order cancelled exactly and the kernel's left 1.9e-8; with a floor from the largest
/// entry, 0, that correct kernel failed.
double gate_gradient_terms(KernelRule rule, const Inputs<float> &in, const Cotangents<float> &ct,
                           const Grads<double> &truth, const Options &opts);

/// \brief How many terms each element of an fp32 output sums, for judge's summed_terms: the
/// intra-chunk scores (gla's and simple_gla's A, the delta rules' A0, dplr's A_qk, A_qa, A_ba,
/// A_bk) a dot product over the K keys, gated_oja's A0 over the V values; dg a reverse
/// cumulative sum, over the whole sequence for gla and simple_gla (T rows at most), inside each
/// chunk for the others (min(T, 64) rows); dbeta three row dots (kda::chunk_wy_bwd: over the V
/// values, the K keys and the min(T, 64) rows of the chunk's scores), K + V + min(T, 64); 1 for
/// the other outputs.
/// Where the twin sums in an order more accurate than another correct one (the delta rules'
/// scalar-gate A0: the twin takes the K-term dot product, then one decay; a kernel may decay
/// each term), its error on one input can fall far below that order's: on the CPU the kernels'
/// own order of A0 at K = 128 erred 7.7 roundings where the twin's error was 1.7
/// (gpu/tests/twin_tests.cpp, kernel_order_of_the_scores_passes_the_twin_verdict).
std::size_t summed_terms(const Case &c, const std::string &output);

/// Whether `output` is the gate's gradient: dg, or dgk (dplr_fla's, by flash-linear-attention's
/// name), whose sums can cancel (gate_gradient_terms).
bool is_gate_gradient(const std::string &output);

/// Whether dg of `rule` is a suffix sum inside each chunk (chunk_local_cumsum_reverse: every rule
/// but gla and simple_gla, whose dg sums over the whole sequence).
bool dg_sums_inside_chunks(KernelRule rule);

/// \brief The part of a score stage's floor that the roundings of its products' factors make,
/// under `policy`: u max_i sqrt(sum_c t_ic^2), u the unit roundoff of the factors (0 under a
/// policy that rounds none), t_ic the terms element i of the stage sums (the stages that
/// summed_terms counts over the keys or values; 0 for every other output).
///
/// Each factor rounded to u carries a relative error of at most u, so the sum of the terms
/// carries a random walk of standard deviation about u sqrt(2/3) sqrt(sum_c t_ic^2): its size
/// is the terms', not the sum's, which can cancel to far less. The twin's own walk on one input
/// can end near zero by chance; where the stage has one element (T = 1), 4 times its error is no
/// bound. At T = 1, gla's one bf16 score (K = 128, keys 32 times as large) summed 1.18 from
/// terms of root sum of squares 10.1: the kernels' order erred 0.0256 where the twin erred 0.0001
/// (gpu/tests/twin_tests.cpp, tensor_core_order_of_the_scores_passes_the_tensor_core_verdict).
///
/// Every score stage is bilinear in its two factors with a positive decay e^{sum of
/// log-gates}, times scale and beta where they apply, so sum_c t_ic^2 is the same stage of the
/// squared inputs with the log-gates doubled (and scale and beta squared): the reference in
/// double computes it (score_sums_of_squares).
double operand_floor(const Case &c, const Drawn &d, Policy policy, const std::string &stage);

/// Whether a stage of `rule` is one of its intra-chunk scores (gla's and simple_gla's A, the
/// delta rules' and gated_oja's A0, dplr_fla's A_qk, A_qa, A_ba, A_bk).
bool is_score_stage(KernelRule rule, const std::string &stage);

/// \brief sum_c t_ic^2 for every element i of a score stage of c (operand_floor): the stage of
/// the squared inputs with the log-gates doubled and the scale squared, in double, its
/// magnitude taken (dplr_fla's A_ba and A_bk read -a, and give -sum_c t_ic^2). Meaningful for
/// the score stages alone.
Tensor<double> score_sums_of_squares(const Case &c, const Drawn &d, const std::string &stage);

/// \brief A check's outcome on one case: its verdicts, or what differed (bitwise checks).
struct Result {
  std::string check;
  Case c;
  std::vector<Verdict> verdicts;
  std::vector<std::string> failures; ///< one line per failed verdict or differing output
  bool holds() const { return failures.empty(); }
  std::string summary() const;
};

/// Kernel forward vs truth vs twin: o, final_state and every stage (kernel_rule.hpp,
/// stage_names).
Result check_forward(const Case &c, unsigned threads = 1);
/// Kernel backward vs truth vs twin: dq, dk, dv, dg, dbeta (delta rules, gated_oja), da and db
/// (dplr_fla), dh0 (when h0) and
/// the stage dh (its truth: the reference's dh0 of the sequence's rest after each chunk, which
/// does not depend on the state there: the loss is affine in it).
Result check_backward(const Case &c, unsigned threads = 1);
/// Rows t < split of o and dq are bitwise unchanged when every input at t >= split changes.
Result check_causality(const Case &c);
/// A varlen call (c.cu_seqlens) equals each sequence run alone, bitwise: o, final state,
/// dq, dk, dv, dg, dbeta, da, db, dh0.
Result check_varlen(const Case &c);

/// The delta rules' and gated_oja's tensor-core backward from the forward's saved A (DeltaSaved)
/// equals the one that solves again, bitwise: dq, dk, dv, dg, dbeta, dh0 and the stage dh, from A
/// alone and (the delta rules) from the WY pass's factors too, keep_factors (other rules and
/// paths: holds, nothing to compare).
Result check_saved_backward(const Case &c);

/// The four checks, by name.
enum class Kind { forward, backward, causality, varlen };
inline constexpr Kind all_kinds[] = {Kind::forward, Kind::backward, Kind::causality, Kind::varlen};
std::string name_of(Kind k);
/// The check of kind k on c; `threads` goes to check_forward and check_backward.
Result run(Kind k, const Case &c, unsigned threads = 1);

/// A check on one of the fixed cases; its name ("backward", "batch_varlen") picks it out
/// alone (`-c RULE -c K64_V128 -c batch_backward` in gpu_kernel_tests).
struct FixedCheck {
  Kind kind;
  Case c;
  std::string name;
};
/// The (K, V) of the fixed cases: every pair in {64, 128}^2.
inline constexpr std::pair<std::size_t, std::size_t> fixed_key_value_sizes[] = {
    {64, 64}, {64, 128}, {128, 64}, {128, 128}};
/// The fixed checks of one rule, storage type and (K, V), beside the random cases: B = H = 2,
/// T = 129 (two chunks and one row) with initial and final state, forward, backward and
/// causality (the inputs of rows t >= 100 redrawn); and a varlen batch of T = 129 with empty
/// sequences first, in the middle and last, and one sequence of exactly one chunk: forward,
/// backward and varlen; for gla and dplr_fla, the first case with keys 32 times as large and gates
/// of scale 2 (large_keys_): forward and backward.
std::vector<FixedCheck> fixed_checks(KernelRule rule, DType t, std::size_t K, std::size_t V);

} // namespace ruleproof::gpu::check
