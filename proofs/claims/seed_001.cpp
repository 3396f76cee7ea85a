// ruleproof: the claims of seed 001 (diagonal plus low rank: the gated DPLR chunkwise forward
// and backward, the reduction to KDA, DPLR without explicit gating). The truth is the
// reference: dplr's recurrence (states, output), its chunkwise stages (F, E, w, c, v2, P, H),
// exact gradients by dual numbers through the recurrence and through the stages from the WY
// representation on (seed_001_support.hpp), and kda's recurrence and chunkwise stages.
// The note's forward here, its backward and discussions in seed_001_backward.cpp: two units,
// so that the two halves compile side by side.
#include "claims.hpp"
#include "seed_001_support.hpp"

namespace ruleproof::proofs::notes {
namespace {

using namespace seed001;

// ---- Gated DPLR Forward ----

std::vector<Claim> recurrence_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.fwd.recurrence", forward_src,
      R"(\mathbf{S}_t &= \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) (\mathbf{I} - \boldsymbol{b}_t \boldsymbol{a}_t^\top) + \boldsymbol{v}_t \boldsymbol{k}_t^\top \in \mathbb{R}^{d_v \times d_k})",
      "S_t = S_{t-1} Diag(alpha_t)(I - b_t a_t^T) + v_t k_t^T (d_v x d_k), o_t = S_t q_t, from "
      "S_0 = 0: every S_t and o_t equal the reference's (seed parameterisation, transposed)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const NoteRun<S> note = note_recurrence(p.x);
        return flat_sides<S>({stack(note.states), note.o}, {stack(t.states), t.o});
      })));
  // The note never says in which order the factors of its products multiply.
  for (const bool is_H : {false, true}) {
    Claim c =
        is_H
            ? claim(
                  "001.fwd.H", forward_src,
                  R"(\mathbf{H}_{[t]}^{r} &= \sum_{i=tC + 1}^{tC + r} (\boldsymbol{v}_{i} \boldsymbol{k}_{i}^{\top}) \prod_{j=i + 1}^{t C + r})",
                  "H^r_[t] = sum_{i=tC+1}^{tC+r} v_i k_i^T prod_{j=i+1}^{tC+r} Diag(alpha_j)"
                  "(I - b_j a_j^T); the order of the product's factors is not stated")
            : claim(
                  "001.fwd.P", forward_src,
                  R"(\mathbf{P}_{[t]}^{r} &= \prod_{i=t C + 1}^{t C + r} \text{Diag}(\boldsymbol{\alpha}_i)(\mathbf{I} - \boldsymbol{b}_{i} \boldsymbol{a}_{i}^{\top}))",
                  "P^r_[t] = prod_{i=tC+1}^{tC+r} Diag(alpha_i)(I - b_i a_i^T); the order of "
                  "the product's factors is not stated");
    for (const bool rising : {true, false})
      c.readings.push_back(
          {rising ? "factors left to right as the index rises"
                  : "factors left to right as the index falls",
           std::string(is_H ? "H^r" : "P^r") +
               (rising ? " with the product X_first X_next ... X_last"
                       : " with X_last ... X_first") +
               ", X_j = Diag(alpha_j)(I - b_j a_j^T); truth: the reference's chunk transition "
               "h' = P h + H of the chunk's rows up to r, transposed",
           check_of([is_H, rising](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Dplr<S> p = draw_dplr(d);
             const Truth<S> t(p);
             const Transitions<S> tr = prefix_transitions(p);
             return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
               const Eigen::Index row = c.s + r;
               return is_H ? Sides<S>{H_product(p.x, c.s, r + 1, rising), tr.H[row]}
                           : Sides<S>{P_product(p.x, c.s, r + 1, rising), tr.P[row]};
             });
           })});
    out.push_back(c);
  }
  out.push_back(claim(
      "001.fwd.chunk_state", forward_src,
      R"(\mathbf{S}_{[t]}^{r} = \mathbf{S}_{[t-1]}^{C} \mathbf{P}_{[t]}^{r} + \mathbf{H}_{[t]}^{r})",
      "S^r_[t] = S^C_[t-1] P^r_[t] + H^r_[t] for every chunk t and row r, P and H as products "
      "rising left to right, S^C_[t-1] the state before the chunk (a drawn initial state before "
      "the first)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
          return Sides<S>{c.S0 * P_product(p.x, c.s, r + 1, true) +
                              H_product(p.x, c.s, r + 1, true),
                          t.state_after(c.s + r + 1)};
        });
      })));
  // The note's recurrence never says what S_0 is.
  {
    Claim c = claim("001.fwd.chunk_state_first", forward_src,
                    R"(\quad \text{where } \mathbf{S}_{[-1]}^{C} = \mathbf{0})",
                    "S^r_[0] = S^C_[-1] P^r_[0] + H^r_[0] with S^C_[-1] = 0 (chunks numbered from "
                    "0); the recurrence's S_0 is never stated");
    for (const bool with_h0 : {false, true})
      c.readings.push_back(
          {with_h0 ? "S_0 an initial state (the kernels' initial_state)" : "S_0 = 0",
           with_h0 ? "S^r_[0] = H^r_[0] against the recurrence from a drawn S_0"
                   : "S^r_[0] = H^r_[0] against the recurrence from S_0 = 0",
           check_of([with_h0](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Dplr<S> p = draw_dplr(d, with_h0);
             const Truth<S> t(p);
             std::vector<Mat<S>> l, r;
             for (Eigen::Index k = 0; k < p.chunks[0].size; ++k) {
               l.push_back(H_product(p.x, 0, k + 1, true));
               r.push_back(t.state_after(k + 1));
             }
             return sides_of(l, r);
           })});
    out.push_back(c);
  }
  return out;
}

std::vector<Claim> wy_claims() {
  std::vector<Claim> out;
  // "When k = 0": k is no symbol of the rule; the low-rank part, or the keys.
  {
    Claim c = claim(
        "001.fwd.P_k0", forward_src,
        R"(\prod_{i=t C + 1}^{t C + r} \text{Diag}(\boldsymbol{\alpha}_{[t]}^i) = \text{Diag}(\boldsymbol{\gamma}_{[t]}^r))",
        "when k = 0, P^r_[t] = prod Diag(alpha^i) = Diag(gamma^r_[t]), gamma^r the chunk's "
        "cumulative product of alpha");
    for (const bool keys : {false, true})
      c.readings.push_back(
          {keys ? "k = 0: the keys k_t vanish" : "k = 0: the rank-one part vanishes (b_t = 0)",
           keys ? "with k_t = 0, P^r_[t] = Diag(gamma^r)" : "with b_t = 0, P^r_[t] = Diag(gamma^r)",
           check_of([keys](auto &d) {
             using S = scalar_of<decltype(d)>;
             Dplr<S> p = draw_dplr(d);
             (keys ? p.x.k : p.x.b).setZero();
             const Truth<S> t(p);
             const Transitions<S> tr = prefix_transitions(p);
             return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
               return Sides<S>{c.Dgamma(r), tr.P[c.s + r]};
             });
           })});
    out.push_back(c);
  }
  out.push_back(claim(
      "001.fwd.P_wy_assumption", forward_src,
      R"(\mathbf{P}_{[t]}^{r} = \text{Diag}(\boldsymbol{\gamma}_{[t]}^r) - \sum_{i=1}^{r} \text{Diag}(\boldsymbol{\eta}_{[t]}^r) \text{Diag}(\boldsymbol{\xi}_{[t]}^i))",
      "P^r = Diag(gamma^r) - sum_{i<=r} Diag(eta^r) Diag(xi^i) w^i a^iT Diag(eps^i) "
      "Diag(lambda^r), with the note's setting eta = I, xi absorbed into w, eps^i = "
      "Diag(gamma^i)^-1, lambda^r = gamma^r, and w the reference's",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const Transitions<S> tr = prefix_transitions(p);
        return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
          return Sides<S>{c.Dgamma(r) - accumulated(c.W, c.A, c.Gamma, r), tr.P[c.s + r]};
        });
      })));
  out.push_back(claim(
      "001.fwd.P_step", forward_src,
      R"(\mathbf{P}_{[t]}^{r} &= \mathbf{P}_{[t]}^{r-1} \text{Diag}(\boldsymbol{\alpha}_{[t]}^r) (\mathbf{I} - \boldsymbol{b}_{[t]}^r \boldsymbol{a}_{[t]}^{r\top}))",
      "P^r_[t] = P^{r-1}_[t] Diag(alpha^r)(I - b^r a^rT), P^0 = I, with the reference's P",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const Transitions<S> tr = prefix_transitions(p);
        return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
          const Mat<S> before = r == 0 ? identity<S>(c.K.cols()) : tr.P[c.s + r - 1];
          return Sides<S>{before * transition(p.x, c.s + r), tr.P[c.s + r]};
        });
      })));
  // The induction step multiplied out, for any eta, xi, w, eps, lambda: its third term.
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "001.fwd.P_step_expanded.corrected" : "001.fwd.P_step_expanded", forward_src,
        R"(&- \sum_{i=1}^{r-1} \text{Diag}(\boldsymbol{\eta}_{[t]}^{r-1}) \text{Diag}(\boldsymbol{\xi}_{[t]}^i))",
        std::string("P^{r-1} Diag(alpha^r)(I - b^r a^rT) = Diag(gamma^r) - Diag(gamma^r) b^r a^rT "
                    "- sum_{i<r} T_i") +
            (corrected ? " Diag(alpha^r)" : "") +
            " + sum_{i<r} T_i Diag(alpha^r) b^r a^rT, T_i = Diag(eta^{r-1}) Diag(xi^i) w^i a^iT "
            "Diag(eps^i) Diag(lambda^{r-1}), P^{r-1} the assumed form, every parameter drawn",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Eigen::Index r = static_cast<Eigen::Index>(d.sizes.C);
          const Eigen::Index K = static_cast<Eigen::Index>(d.sizes.K);
          const Mat<S> g = d.log_gates(r, K);
          const Mat<S> alpha = exp_of(g), gamma = cumulative_decay(g);
          const Mat<S> w = d.values(r, K), a = d.values(r, K), b = d.values(1, K);
          const Mat<S> eta = d.values(1, K), lambda = d.values(1, K);
          const Mat<S> xi = d.values(r, K), eps = d.values(r, K);
          const auto T_i = [&](Eigen::Index i) {
            return Mat<S>(diag(eta) * diag(Mat<S>(xi.row(i))) * w.row(i).transpose() * a.row(i) *
                          diag(Mat<S>(eps.row(i))) * diag(lambda));
          };
          const Mat<S> gamma_prev = r > 1 ? Mat<S>(gamma.row(r - 2)) : Mat<S>::Ones(1, K);
          const Mat<S> D_gamma = diag(Mat<S>(gamma.row(r - 1)));
          const Mat<S> D_alpha = diag(Mat<S>(alpha.row(r - 1)));
          const Mat<S> ba = b.transpose() * a.row(r - 1);
          Mat<S> P_prev = diag(gamma_prev), expanded = D_gamma - D_gamma * ba;
          for (Eigen::Index i = 0; i + 1 < r; ++i) {
            P_prev -= T_i(i);
            expanded -= corrected ? Mat<S>(T_i(i) * D_alpha) : T_i(i);
            expanded += T_i(i) * D_alpha * ba;
          }
          return Sides<S>{expanded, P_prev * D_alpha * (identity<S>(K) - ba)};
        }));
    if (corrected)
      c.correction_of = "001.fwd.P_step_expanded";
    out.push_back(c);
  }
  out.push_back(claim(
      "001.fwd.w", forward_src,
      R"(\boldsymbol{w}_{[t]}^{r} &= \left(\mathbf{I} - \sum_{i=1}^{r-1} \boldsymbol{w}_{[t]}^{i} \left( \text{Diag}(\boldsymbol{\gamma}_{[t]}^i)^{-1} \boldsymbol{a}_{[t]}^{i} \right)^\top \right))",
      "w^r_[t] = (I - sum_{i<r} w^i (Diag(gamma^i)^-1 a^i)^T) Diag(gamma^r) b^r equals the "
      "reference's w (rows of W = E B<-)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{w_recursion(c.A, c.B, c.Gamma), c.W};
        });
      })));
  out.push_back(claim(
      "001.fwd.P_wy", forward_src,
      R"(\mathbf{P}_{[t]}^{r} &= \left(\mathbf{I}- \sum_{i=1}^{r} \boldsymbol{w}_{[t]}^{i} \left( \text{Diag}(\boldsymbol{\gamma}_{[t]}^i)^{-1} \boldsymbol{a}_{[t]}^{i} \right)^\top \right))",
      "P^r_[t] = (I - sum_{i<=r} w^i (Diag(gamma^i)^-1 a^i)^T) Diag(gamma^r), w^i by the note's "
      "recursion",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const Transitions<S> tr = prefix_transitions(p);
        return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
          const Mat<S> W = w_recursion(c.A, c.B, c.Gamma);
          const Mat<S> sum = W.topRows(r + 1).transpose() * c.right(c.A).topRows(r + 1);
          return Sides<S>{(identity<S>(c.K.cols()) - sum) * c.Dgamma(r), tr.P[c.s + r]};
        });
      })));
  return out;
}

/// S_t as the two accumulators with the note's setting (gamma = gamma1 = prod alpha, eps =
/// eps1 = gamma^-1, eta = eta1 = I), u_i = v_i and c_i by the note's recursion over the whole
/// sequence, against the recurrence's states from S_0 = 0.
Check two_accumulators() {
  return check_of([](auto &d) {
    using S = scalar_of<decltype(d)>;
    const Dplr<S> p = draw_dplr(d);
    const Truth<S> t(p);
    const Mat<S> Gamma = cumulative_decay(p.x.g);
    const Mat<S> C = c_recursion(p.x.v, p.x.k, p.x.a, p.x.b, Gamma);
    std::vector<Mat<S>> l;
    for (Eigen::Index r = 0; r < p.x.q.rows(); ++r)
      l.push_back(accumulated(p.x.v, p.x.k, Gamma, r) + accumulated(C, p.x.a, Gamma, r));
    return sides_of(l, t.states);
  });
}

/// The induction's step with S_{t-1} in the assumed form, every parameter drawn: line 1
/// (S_{t-1} Diag(alpha_t) - S_{t-1} Diag(alpha_t) b_t a_t^T + v_t k_t^T) or line 2 (the four
/// sums times Diag(alpha_t), and b_t a_t^T, + v_t k_t^T), against S_{t-1} Diag(alpha_t)(I -
/// b_t a_t^T) + v_t k_t^T.
Check induction_line(int line) {
  return check_of([line](auto &d) {
    using S = scalar_of<decltype(d)>;
    const Eigen::Index n = static_cast<Eigen::Index>(d.sizes.T) - 1;
    const Eigen::Index K = static_cast<Eigen::Index>(d.sizes.K);
    const Eigen::Index V = static_cast<Eigen::Index>(d.sizes.V);
    const Mat<S> u = d.values(n, V), k = d.values(n, K), c = d.values(n, V);
    const Mat<S> a = d.values(n, K), eps = d.values(n, K), eps1 = d.values(n, K);
    const Mat<S> eta = d.values(1, V), eta1 = d.values(1, V);
    const Mat<S> gamma = d.values(1, K), gamma1 = d.values(1, K);
    const Mat<S> D_alpha = diag(exp_of(d.log_gates(1, K)));
    const Mat<S> b_t = d.values(1, K), a_t = d.values(1, K), k_t = d.values(1, K);
    const Mat<S> v_t = d.values(1, V);
    const Mat<S> ba = b_t.transpose() * a_t, vk = v_t.transpose() * k_t;
    Mat<S> U = Mat<S>::Zero(V, K), C1 = Mat<S>::Zero(V, K);
    for (Eigen::Index i = 0; i < n; ++i) {
      U += diag(eta) * u.row(i).transpose() * k.row(i) * diag(Mat<S>(eps.row(i))) * diag(gamma);
      C1 += diag(eta1) * c.row(i).transpose() * a.row(i) * diag(Mat<S>(eps1.row(i))) * diag(gamma1);
    }
    const Mat<S> S_prev = U + C1;
    const Mat<S> written =
        line == 1 ? Mat<S>(S_prev * D_alpha - S_prev * D_alpha * ba + vk)
                  : Mat<S>(U * D_alpha + C1 * D_alpha - U * D_alpha * ba - C1 * D_alpha * ba + vk);
    return Sides<S>{written, Mat<S>(S_prev * D_alpha * (identity<S>(K) - ba) + vk)};
  });
}

std::vector<Claim> accumulator_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.fwd.S_two_accumulators", forward_src,
      R"(\mathbf{S}_t = \sum_{i=1}^{t} \text{Diag}(\boldsymbol{\eta}_t) \boldsymbol{u}_i \boldsymbol{k}_i^\top \text{Diag}(\boldsymbol{\epsilon}_i) \text{Diag}(\boldsymbol{\gamma}_t))",
      "S_t = sum_{i<=t} Diag(eta_t) u_i k_i^T Diag(eps_i) Diag(gamma_t) + sum_{i<=t} Diag(eta1_t) "
      "c_i a_i^T Diag(eps1_i) Diag(gamma1_t) with the note's setting (gamma = gamma1 = prod "
      "alpha, eps = eps1 = gamma^-1, eta = eta1 = I), u_i = v_i and c_i by the note's recursion "
      "over the whole sequence, S_0 = 0",
      two_accumulators()));
  // The induction, line by line.
  out.push_back(claim(
      "001.fwd.S_induction", forward_src,
      R"(\mathbf{S}_t &= \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) - \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) \boldsymbol{b}_t \boldsymbol{a}_t^\top)",
      "the induction's first line: S_t = S_{t-1} Diag(alpha_t) - S_{t-1} Diag(alpha_t) b_t "
      "a_t^T + v_t k_t^T, S_{t-1} the assumed form with every parameter drawn",
      induction_line(1)));
  out.push_back(claim(
      "001.fwd.S_induction_sums", forward_src,
      R"(&= \sum_{i=1}^{t-1} \text{Diag}(\boldsymbol{\eta}_{t-1}) \boldsymbol{u}_i \boldsymbol{k}_i^\top \text{Diag}(\boldsymbol{\epsilon}_i) \text{Diag}(\boldsymbol{\gamma}_{t-1}))",
      "the induction's second line: the two accumulators' sums to t-1 times Diag(alpha_t), "
      "minus the same times Diag(alpha_t) b_t a_t^T, plus v_t k_t^T, every parameter drawn",
      induction_line(2)));
  out.push_back(claim(
      "001.fwd.S_induction_result", forward_src,
      R"(&= \sum_{i=1}^{t} \text{Diag}(\boldsymbol{\eta}_{t}) \boldsymbol{u}_i \boldsymbol{k}_i^\top \text{Diag}(\boldsymbol{\epsilon}_i) \text{Diag}(\boldsymbol{\gamma}_{t}))",
      "the induction's last line: the two accumulators summed to t, with the setting the note "
      "states next (gamma = gamma1 = prod alpha, eps = eps1 = gamma^-1, eta = eta1 = I), u_i = "
      "v_i and c_i by the note's recursion",
      two_accumulators()));
  out.push_back(claim(
      "001.fwd.u", forward_src, R"(\boldsymbol{u}_{[t]}^r &= \boldsymbol{v}_{[t]}^r)",
      "u^r_[t] = v^r_[t]: H^r_[t] = sum_{i<=r} u^i (Diag(gamma^i)^-1 k^i)^T Diag(gamma^r) + "
      "sum_{i<=r} c^i (Diag(gamma^i)^-1 a^i)^T Diag(gamma^r) with u = v and the reference's c",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const Transitions<S> tr = prefix_transitions(p);
        return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
          return Sides<S>{accumulated(c.V, c.K, c.Gamma, r) + accumulated(c.C, c.A, c.Gamma, r),
                          tr.H[c.s + r]};
        });
      })));
  {
    const std::string statement =
        "c^r_[t] = -sum_{i<r} (v_i (Diag(gamma^i)^-1 k^i)^T + c^i (Diag(gamma^i)^-1 a^i)^T) "
        "Diag(gamma^r) b^r equals the reference's c";
    Claim c = claim(
        "001.fwd.c", forward_src,
        R"(\boldsymbol{c}_{[t]}^r &= - \sum_{i=1}^{r-1} \left( \boldsymbol{v}_i \left(\text{Diag}(\boldsymbol{\gamma}_{[t]}^i)^{-1} \boldsymbol{k}_{[t]}^i\right)^\top)",
        statement + "; v_i carries no chunk index");
    for (const bool sequence_rows : {false, true})
      c.readings.push_back(v_index_reading(
          sequence_rows, statement, check_of([sequence_rows](auto &d) {
            using S = scalar_of<decltype(d)>;
            const Dplr<S> p = draw_dplr(d);
            const Truth<S> t(p);
            return per_chunk(p, t, [&](const Chunk<S> &c) {
              return Sides<S>{c_recursion(v_rows(p, c, sequence_rows), c.K, c.A, c.B, c.Gamma),
                              c.C};
            });
          })));
    out.push_back(c);
  }
  return out;
}

std::vector<Claim> state_output_claims() {
  std::vector<Claim> out;
  {
    const std::string statement =
        "S^r_[t] = S^C_[t-1] (I - sum_{i<=r} w^i (Diag(gamma^i)^-1 a^i)^T) Diag(gamma^r) + "
        "sum_{i<=r} v_i (Diag(gamma^i)^-1 k^i)^T Diag(gamma^r) + sum_{i<=r} c_i (..a^i)^T "
        "Diag(gamma^r) = S^C_[t-1] Diag(gamma^r) + sum v_i (..k^i)^T Diag(gamma^r) + sum (c_i - "
        "S^C_[t-1] w^i)(..a^i)^T Diag(gamma^r), w, c the reference's";
    for (const bool first_line : {true, false}) {
      Claim c = claim(
          first_line ? "001.fwd.S_r_wy" : "001.fwd.S_r", forward_src,
          first_line
              ? R"(\mathbf{S}_{[t]}^r &= \mathbf{S}_{[t-1]}^C \left(\mathbf{I}- \sum_{i=1}^{r} \boldsymbol{w}_{[t]}^{i})"
              : R"(&= \mathbf{S}_{[t-1]}^C \text{Diag}(\boldsymbol{\gamma}_{[t]}^r) + \sum_{i=1}^{r} \boldsymbol{v}_i)",
          (first_line ? "the first line: " : "the second line: ") + statement +
              "; v_i carries no chunk index");
      for (const bool sequence_rows : {false, true})
        c.readings.push_back(v_index_reading(
            sequence_rows, statement, check_of([sequence_rows, first_line](auto &d) {
              using S = scalar_of<decltype(d)>;
              const Dplr<S> p = draw_dplr(d, true);
              const Truth<S> t(p);
              return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
                const Mat<S> V = v_rows(p, c, sequence_rows);
                const Mat<S> wa = c.W.topRows(r + 1).transpose() * c.right(c.A).topRows(r + 1);
                const Mat<S> form1 = c.S0 * (identity<S>(c.K.cols()) - wa) * c.Dgamma(r) +
                                     accumulated(V, c.K, c.Gamma, r) +
                                     accumulated(c.C, c.A, c.Gamma, r);
                const Mat<S> form2 = c.S0 * c.Dgamma(r) + accumulated(V, c.K, c.Gamma, r) +
                                     accumulated(c.V2(), c.A, c.Gamma, r);
                return Sides<S>{first_line ? form1 : form2, t.state_after(c.s + r + 1)};
              });
            })));
      out.push_back(c);
    }
  }
  {
    const std::string statement =
        "o^r_[t] = S^C_[t-1] Diag(gamma^r) q^r + sum_{i<=r} v_i (Diag(gamma^i)^-1 k^i)^T "
        "Diag(gamma^r) q^r + sum_{i<=r} (c^i - S^C_[t-1] w^i)(Diag(gamma^i)^-1 a^i)^T "
        "Diag(gamma^r) q^r, w, c the reference's";
    Claim c = claim(
        "001.fwd.o_r", forward_src,
        R"(\boldsymbol{o}_{[t]}^r &= \mathbf{S}_{[t-1]}^C \text{Diag}(\boldsymbol{\gamma}_{[t]}^r) \boldsymbol{q}_{[t]}^r)",
        statement + "; v_i carries no chunk index");
    for (const bool sequence_rows : {false, true})
      c.readings.push_back(v_index_reading(
          sequence_rows, statement, check_of([sequence_rows](auto &d) {
            using S = scalar_of<decltype(d)>;
            const Dplr<S> p = draw_dplr(d, true);
            const Truth<S> t(p);
            return per_row(p, t, [&](const Chunk<S> &c, Eigen::Index r) {
              const Mat<S> q = c.Q.row(r).transpose();
              const Mat<S> o = c.S0 * c.Dgamma(r) * q +
                               accumulated(v_rows(p, c, sequence_rows), c.K, c.Gamma, r) * q +
                               accumulated(c.V2(), c.A, c.Gamma, r) * q;
              return Sides<S>{o, Mat<S>(t.o.row(c.s + r).transpose())};
            });
          })));
    out.push_back(c);
  }
  out.push_back(claim(
      "001.fwd.S_matrix", forward_src,
      R"(\mathbf{S}_{[t]}^C &= \mathbf{S}_{[t-1]}^C \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) + \mathbf{V}_{[t]}^\top \overrightarrow{\mathbf{K}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C))",
      "S^C_[t] = S^C_[t-1] Diag(gamma^C) + V^T K-> Diag(gamma^C) + (C - W S^C_[t-1]^T)^T A-> "
      "Diag(gamma^C), X-> = X / Gamma, W, C the reference's",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{c.S0 * c.DgammaC() + c.V.transpose() * c.right(c.K) * c.DgammaC() +
                              c.V2().transpose() * c.right(c.A) * c.DgammaC(),
                          c.S1};
        });
      })));
  // M is first used here; the note defines it only later, through M_-1 = M - I.
  {
    Claim c = claim(
        "001.fwd.O_matrix", forward_src,
        R"(\left( \overleftarrow{\mathbf{Q}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M} \right) \mathbf{V}_{[t]} +)",
        "O_[t] = Q<- S^C_[t-1]^T + (Q<- K->^T . M) V + (Q<- A->^T . M)(C - W S^C_[t-1]^T); M "
        "is not defined where it is first used");
    for (const bool inclusive : {true, false})
      c.readings.push_back(
          {inclusive ? "M_ij = 1 for i >= j (M_-1 = M - I)" : "M_ij = 1 for i > j",
           std::string("O_[t] as written, M_ij = 1 for i ") + (inclusive ? ">=" : ">") + " j",
           check_of([inclusive](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Dplr<S> p = draw_dplr(d, true);
             const Truth<S> t(p);
             return per_chunk(p, t, [&](const Chunk<S> &c) {
               const Mat<S> M = inclusive ? c.M : c.M_1, Q_left = c.left(c.Q);
               return Sides<S>{Q_left * c.S0.transpose() + scores(Q_left, c.right(c.K), M) * c.V +
                                   scores(Q_left, c.right(c.A), M) * c.V2(),
                               Mat<S>(t.o.middleRows(c.s, c.n))};
             });
           })});
    out.push_back(c);
  }
  return out;
}

std::vector<Claim> wc_matrix_claims() {
  std::vector<Claim> out;
  // w's recursion, restated where the matrix form starts from it.
  out.push_back(claim(
      "001.fwd.w_restated", forward_src,
      R"(\boldsymbol{w}_{[t]}^r &= \left( \mathbf{I} - \sum_{i=1}^{r-1} \boldsymbol{w}_{[t]}^i \left(\text{Diag}(\boldsymbol{\gamma}_{[t]}^i)^{-1} \boldsymbol{a}_{[t]}^i\right)^\top \right))",
      "w^r_[t] = (I - sum_{i<r} w^i (Diag(gamma^i)^-1 a^i)^T)(Diag(gamma^r) b^r) equals the "
      "reference's w",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{w_recursion(c.A, c.B, c.Gamma), c.W};
        });
      })));
  // The matrix forms of w and c: each first as a triangular system (the reference's W or C on
  // both sides), then, after "=>", solved.
  const auto wc_line = [](bool is_W, bool solved) {
    return check_of([is_W, solved](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Dplr<S> p = draw_dplr(d);
      const Truth<S> t(p);
      return per_chunk(p, t, [&](const Chunk<S> &c) {
        const Mat<S> B_left = c.left(c.B);
        const Mat<S> BA = scores(B_left, c.right(c.A), c.M_1);
        const Mat<S> BK = scores(B_left, c.right(c.K), c.M_1);
        const Mat<S> solve = inverse(Mat<S>(c.I() + BA));
        if (is_W)
          return Sides<S>{solved ? Mat<S>(solve * B_left) : Mat<S>(B_left - BA * c.W), c.W};
        return Sides<S>{solved ? Mat<S>(-solve * BK * c.V) : Mat<S>(-BK * c.V - BA * c.C), c.C};
      });
    });
  };
  out.push_back(claim(
      "001.fwd.W", forward_src,
      R"(\Rightarrow \mathbf{W}_{[t]} &= \overleftarrow{\mathbf{B}_{[t]}} - \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{W}_{[t]})",
      "W = B<- - (B<- A->^T . M_-1) W, B<- = B . Gamma, with the reference's w on "
      "both sides",
      wc_line(true, false)));
  out.push_back(claim(
      "001.fwd.W_inverse", forward_src,
      R"(\Rightarrow \mathbf{W}_{[t]} &= \left( \mathbf{I} + \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \right)^{-1})",
      "W = (I + (B<- A->^T . M_-1))^-1 B<-, B<- = B . Gamma, against the "
      "reference's w",
      wc_line(true, true)));
  out.push_back(claim(
      "001.fwd.C", forward_src,
      R"(\mathbf{C}_{[t]} &= - \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]} - \left()",
      "C = -(B<- K->^T . M_-1) V - (B<- A->^T . M_-1) C, with the reference's c on "
      "both sides",
      wc_line(false, false)));
  out.push_back(claim(
      "001.fwd.C_inverse", forward_src,
      R"(\Rightarrow \mathbf{C}_{[t]} &= - \left( \mathbf{I} + \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \right)^{-1})",
      "C = -(I + (B<- A->^T . M_-1))^-1 (B<- K->^T . M_-1) V, against the "
      "reference's c",
      wc_line(false, true)));
  out.push_back(claim(
      "001.fwd.E", forward_src,
      R"(\mathbf{E}_{[t]} = \left(\mathbf{I} + \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \right)^{-1})",
      "E_[t] = (I + (B<- A->^T . M_-1))^-1 equals the reference's E (solve_tril)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{inverse(Mat<S>(c.I() + scores(c.left(c.B), c.right(c.A), c.M_1))), c.E};
        });
      })));
  return out;
}

} // namespace

std::vector<Claim> seed_001_claims() {
  std::vector<Claim> out;
  for (auto part : {recurrence_claims, wy_claims, accumulator_claims, state_output_claims,
                    wc_matrix_claims, seed001::backward_and_discussion_claims})
    for (Claim &c : part())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
