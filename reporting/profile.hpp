// ruleproof: where along a sequence an output's error sits. An error profile is the worst
// |computed - truth| at each time step and in each chunk, per head, of one output laid out
// [B, T, H, ...]; an error growth is the worst error of one output over sequences of growing
// T. Both go into a run's details (reporting/schema/README.md, "Error profiles") for the HTML
// report's plots.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/core/tensor.hpp"
#include "result.hpp"

namespace ruleproof::reports {

namespace detail {
/// The larger of two errors; NaN when either is, so a NaN cannot hide behind a finite maximum.
inline double worse(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}
} // namespace detail

/// \brief The worst error at each time step and in each chunk of one output, per head.
struct ErrorProfile {
  std::string rule, output;
  std::string compared;  ///< what was measured against the truth, in words
  std::string scalar;    ///< its arithmetic or storage type
  std::string case_text; ///< the case's sizes and seed
  std::size_t chunk_size = 0;
  double truth_max = 0; ///< max |truth|, to read the errors as relative ones
  std::vector<std::vector<double>> time, chunk; ///< [head][t], [head][chunk]: NaN when not finite
};

/// \brief The profile of `computed` against `truth`, both [B, T, H, ...] of one shape: at
/// (t, h), the largest |computed - truth| over the batch and the trailing dimensions; a NaN
/// or infinite computed element makes that entry NaN.
template <class A, class B>
ErrorProfile error_profile(const Tensor<A> &computed, const Tensor<B> &truth,
                           std::size_t chunk_size) {
  if (computed.shape() != truth.shape() || truth.rank() < 3 || chunk_size == 0)
    throw std::invalid_argument("error_profile: shapes " + shape_string(computed.shape()) +
                                " and " + shape_string(truth.shape()) +
                                " are not one [B, T, H, ...] shape, or chunk size 0");
  const std::size_t batch = truth.dim(0), T = truth.dim(1), H = truth.dim(2);
  const std::size_t inner = T * H == 0 || batch == 0 ? 0 : truth.size() / (batch * T * H);
  const std::size_t chunks = (T + chunk_size - 1) / chunk_size;
  ErrorProfile p;
  p.chunk_size = chunk_size;
  p.time.assign(H, std::vector<double>(T, 0.0));
  p.chunk.assign(H, std::vector<double>(chunks, 0.0));
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const std::size_t h = (i / inner) % H, t = (i / (inner * H)) % T;
    const double x = static_cast<double>(computed[i]), y = static_cast<double>(truth[i]);
    const double e = std::isfinite(x) ? std::abs(x - y) : std::numeric_limits<double>::quiet_NaN();
    p.time[h][t] = detail::worse(p.time[h][t], e);
    p.truth_max = std::max(p.truth_max, std::abs(y));
  }
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t t = 0; t < T; ++t)
      p.chunk[h][t / chunk_size] = detail::worse(p.chunk[h][t / chunk_size], p.time[h][t]);
  return p;
}

/// \brief One point of an error growth: the worst error of an output at sequence length T.
struct GrowthPoint {
  std::size_t T = 0;
  double error = 0, truth_max = 0;
};

/// \brief The worst error of one output over sequences of growing length.
struct ErrorGrowth {
  std::string rule, output, compared, scalar, case_text;
  std::vector<GrowthPoint> points;
};

inline nlohmann::json to_json(const ErrorProfile &p) {
  const auto numbers = [](const std::vector<std::vector<double>> &rows) {
    nlohmann::json j = nlohmann::json::array();
    for (const std::vector<double> &row : rows) {
      nlohmann::json r = nlohmann::json::array();
      for (double x : row)
        r.push_back(number_json(x));
      j.push_back(r);
    }
    return j;
  };
  return {{"rule", p.rule},           {"output", p.output},      {"compared", p.compared},
          {"scalar", p.scalar},       {"case", p.case_text},     {"chunk_size", p.chunk_size},
          {"truth_max", p.truth_max}, {"time", numbers(p.time)}, {"chunk", numbers(p.chunk)}};
}

inline nlohmann::json to_json(const ErrorGrowth &g) {
  nlohmann::json points = nlohmann::json::array();
  for (const GrowthPoint &pt : g.points)
    points.push_back({{"T", pt.T}, {"error", number_json(pt.error)}, {"truth_max", pt.truth_max}});
  return {{"rule", g.rule},     {"output", g.output},  {"compared", g.compared},
          {"scalar", g.scalar}, {"case", g.case_text}, {"points", points}};
}

} // namespace ruleproof::reports
