// ruleproof: RapidCheck generators of GPU check cases (gpu/check.hpp), shared by the GPU
// property tests and `ruleproof gpu-check` (which draws from them with seeds of its own).
// Shapes are drawn and shrink (towards B = H = 1, K = V = 64, short T, no varlen, no
// initial state); values come from the case's seed (check.cpp, draw), so a shrunk case keeps
// random values of the kernels' usual magnitude.
#pragma once

#include <mutex>
#include <optional>

#include <rapidcheck.h>

#include "check.hpp"

namespace ruleproof::gpu::check::gen {

/// A size in [lo, hi], both ends included, independent of the RapidCheck size.
inline rc::Gen<std::size_t> size_in(std::size_t lo, std::size_t hi) {
  return rc::gen::resize(100, rc::gen::inRange<std::size_t>(lo, hi + 1));
}

/// What a check needs of a case's shape: varlen forces cu_seqlens, causality T >= 1.
enum class Need { any, varlen, causal };

/// \brief A case for the kernels of `rule` in storage type `storage`: K, V in {64, 128}, T in
/// [0, 200] (a multiple of 64 or not), B, H in {1, 2}, a third of the cases varlen with up to 4
/// sequences of 0 to 150 rows (an empty one a fifth of the time), initial state, final state
/// and dht each drawn, gates of scale 1/16, 1/2 or 2 (decay per step down to e^-2: a chunk's
/// span reaches e^-128, past fp32's factored range); gla's and dplr_fla's keys a quarter of the
/// time 32 times as large (in fp16, past the magnitude of 21 that a spread of 8 keeps factors
/// below 65504 for: gpu/detail/gla_tc.cuh, spread_limit_for).
inline rc::Gen<Case> case_for(KernelRule rule, DType storage, Need need = Need::any) {
  return rc::gen::exec([rule, storage, need] {
    Case c;
    c.rule = rule;
    c.storage = storage;
    c.K = *rc::gen::element<std::size_t>(64, 128);
    c.V = *rc::gen::element<std::size_t>(64, 128);
    c.H = *size_in(1, 2);
    const bool varlen = need == Need::varlen || (need == Need::any && *size_in(0, 2) == 2);
    if (varlen) {
      c.B = 1;
      const std::size_t N = *size_in(1, 4);
      c.cu_seqlens = {0};
      for (std::size_t n = 0; n < N; ++n) {
        const std::size_t len = *size_in(0, 4) == 0 ? 0 : *size_in(1, 150);
        c.cu_seqlens.push_back(c.cu_seqlens.back() + static_cast<std::int64_t>(len));
      }
      c.T = static_cast<std::size_t>(c.cu_seqlens.back());
    } else {
      c.B = *size_in(1, 2);
      c.T = *size_in(need == Need::causal ? 1 : 0, 200);
    }
    c.has_h0 = *rc::gen::arbitrary<bool>();
    c.output_final_state = *size_in(0, 3) != 0;
    c.has_dht = *rc::gen::arbitrary<bool>();
    c.gate_scale = *rc::gen::element(0.5, 1.0 / 16, 2.0);
    c.seed = *rc::gen::arbitrary<std::uint64_t>();
    c.split = c.T == 0 ? 0 : *size_in(0, c.T - 1);
    if (rule == KernelRule::gla || rule == KernelRule::dplr_fla) // drawn last: earlier draws stay
      c.key_scale = *rc::gen::element(1.0, 1.0, 1.0, 32.0);
    return c;
  });
}

/// RapidCheck keeps the context of a generator that is running in globals (the static stacks of
/// rc::detail::ImplicitParam), so drawing a case, or walking its shrinks, from two threads at
/// once corrupts it. A program that draws from several threads takes this lock around every draw
/// (draw_case and ShrinkWalk do).
inline std::mutex &rapidcheck_lock() {
  static std::mutex lock;
  return lock;
}

/// The case case_for draws from `seed` (at RapidCheck size 100), under rapidcheck_lock.
inline Case draw_case(KernelRule rule, DType storage, Need need, std::uint64_t seed) {
  const std::lock_guard<std::mutex> lock(rapidcheck_lock());
  return case_for(rule, storage, need)(rc::Random(seed), 100).value();
}

/// \brief A greedy walk down the shrinks of a drawn case, from any thread (each step under
/// rapidcheck_lock): next() gives the next smaller case of the current one, or nothing when they
/// are spent; descend() makes the case next() gave last the current one, whose shrinks are walked
/// next.
class ShrinkWalk {
public:
  /// The walk down the shrinks of draw_case(rule, storage, need, seed).
  ShrinkWalk(KernelRule rule, DType storage, Need need, std::uint64_t seed)
      : current_(locked_draw(rule, storage, need, seed)) {
    const std::lock_guard<std::mutex> lock(rapidcheck_lock());
    shrinks_ = current_.shrinks();
  }
  std::optional<Case> next() {
    const std::lock_guard<std::mutex> lock(rapidcheck_lock());
    rc::Maybe<rc::Shrinkable<Case>> next = shrinks_.next();
    if (!next)
      return std::nullopt;
    last_ = *next;
    return last_.value();
  }
  void descend() {
    const std::lock_guard<std::mutex> lock(rapidcheck_lock());
    current_ = last_;
    shrinks_ = current_.shrinks();
  }

private:
  static rc::Shrinkable<Case> locked_draw(KernelRule rule, DType storage, Need need,
                                          std::uint64_t seed) {
    const std::lock_guard<std::mutex> lock(rapidcheck_lock());
    return case_for(rule, storage, need)(rc::Random(seed), 100);
  }
  rc::Shrinkable<Case> current_, last_ = current_;
  rc::Seq<rc::Shrinkable<Case>> shrinks_;
};

} // namespace ruleproof::gpu::check::gen

namespace ruleproof::gpu::check {
inline void showValue(const Case &c, std::ostream &os) { os << c.describe(); }
} // namespace ruleproof::gpu::check
