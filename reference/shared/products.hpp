// ruleproof: the matrix products of the chunkwise forms, shared by every rule: op(A) op(B)
// with the terms a triangular structure leaves out skipped, row-wise sums of products, and
// the inverse of a unit lower triangular matrix. Eigen's products for every scalar; for
// float, the factors rounded first where an emulated kernel rounds them
// (core/emulation.hpp). A scalar may bring exact products of its own (ExactProducts): float128
// does, in products_float128.hpp, which core/float128.hpp includes, so a unit that uses
// float128 has them and other units never compile them.
#pragma once

#include <optional>
#include <type_traits>

#include "../core/emulation.hpp"
#include "../core/scalar.hpp"

namespace ruleproof::shared {

/// Which terms a product computes: all; only the lower triangle of the result (j <= i);
/// the left factor being lower (l <= i) or upper (l >= i) triangular, only those terms; or
/// the right factor being upper triangular (l <= j), only those terms.
enum class Structure { full, lower_result, left_lower, left_upper, right_upper };

/// \brief A scalar's own products, opt-in: a specialisation sets `enabled` and offers
/// `product(A, transpose_a, B, transpose_b, st)`, `row_dots(A, B)` and
/// `unit_lower_inverse(N)`, each returning nothing where it declines (non-finite input), and
/// the generic path runs. It must be visible wherever the scalar's products are instantiated:
/// the header that defines the scalar includes it.
template <class S> struct ExactProducts { static constexpr bool enabled = false; };

/// Zeroes what the structure says is zero in the left factor or the result (generic path).
template <class S> Mat<S> masked_left(Mat<S> A, Structure st) {
  if (st == Structure::left_lower)
    A = Mat<S>(A.template triangularView<Eigen::Lower>());
  if (st == Structure::left_upper)
    A = Mat<S>(A.template triangularView<Eigen::Upper>());
  return A;
}

/// Zeroes what the structure says is zero in the right factor (generic path).
template <class S> Mat<S> masked_right(Mat<S> B, Structure st) {
  if (st == Structure::right_upper)
    B = Mat<S>(B.template triangularView<Eigen::Upper>());
  return B;
}

/// \brief \f$ \mathrm{op}(A)\, \mathrm{op}(B) \f$ with op the transpose where asked; the
/// structure says which terms count (see Structure).
template <class S, class MA, class MB>
Mat<S> product(const MA &A, bool transpose_a, const MB &B, bool transpose_b,
               Structure st = Structure::full) {
  if constexpr (ExactProducts<S>::enabled)
    if (auto exact = ExactProducts<S>::product(A, transpose_a, B, transpose_b, st))
      return *std::move(exact);
  // An emulated kernel's matrix unit reads both factors rounded (core/emulation.hpp).
  const Mat<S> left =
      masked_left<S>(emulation::operand<S>(transpose_a ? Mat<S>(A.transpose()) : Mat<S>(A)), st);
  const Mat<S> right =
      masked_right<S>(emulation::operand<S>(transpose_b ? Mat<S>(B.transpose()) : Mat<S>(B)), st);
  Mat<S> c = left * right;
  if (st == Structure::lower_result)
    c = Mat<S>(c.template triangularView<Eigen::Lower>());
  return c;
}

/// \brief The matrix product \f$ A B \f$, every term (product() with no transpose).
template <class S, class MA, class MB> Mat<S> mul(const MA &A, const MB &B) {
  return product<S>(A, false, B, false);
}

/// \brief \f$ \mathrm{rowsum}(A \odot B) \f$: row i is \f$ \sum_c A_{ic} B_{ic} \f$.
template <class S> Vec<S> row_dots(const Mat<S> &A, const Mat<S> &B) {
  if constexpr (ExactProducts<S>::enabled)
    if (auto exact = ExactProducts<S>::row_dots(A, B))
      return *std::move(exact);
  return A.cwiseProduct(B).rowwise().sum();
}

/// \brief \f$ (I + N)^{-1} \f$ for N strictly lower triangular: unit lower triangular.
template <class S> Mat<S> unit_lower_inverse(const Mat<S> &N) {
  if constexpr (ExactProducts<S>::enabled)
    if (auto exact = ExactProducts<S>::unit_lower_inverse(N))
      return *std::move(exact);
  const Mat<S> I = Mat<S>::Identity(N.rows(), N.cols());
  const Mat<S> unit_lower = I + N;
  return unit_lower.template triangularView<Eigen::Lower>().solve(I);
}

} // namespace ruleproof::shared
