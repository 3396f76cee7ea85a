// ruleproof: the claims of seed 001 (diagonal plus low rank: the gated DPLR chunkwise forward
// and backward, the reduction to KDA, DPLR without explicit gating). The truth is the
// reference: dplr's recurrence (states, output), its chunkwise stages (F, E, w, c, v2, P, H),
// exact gradients by dual numbers through the recurrence and through the stages from the WY
// representation on (seed_001_support.hpp), and kda's recurrence and chunkwise stages.
#include "claims.hpp"
#include "reference/kda/recurrent.hpp"
#include "seed_001_support.hpp"

namespace ruleproof::proofs::notes {
namespace {

using namespace seed001;

const Source forward_src{seed_001, "Gated DPLR Forward", ""};
Source backward_src(const char *part) {
  return {seed_001, std::string("Gated DPLR Backward / ") + part, ""};
}
const Source kda_src{seed_001, "Discussions / Reducing to KDA", ""};
const Source no_gate_src{seed_001, "Discussions / DPLR Without Explicit Gating", ""};

Claim gradient_claim(Claim c) {
  c.gradient = true;
  return c;
}
/// The rows the note's v_i (written without [t]) stands for in chunk c: the chunk's own, or
/// rows 1 ... n of the sequence.
template <class S> Mat<S> v_rows(const Dplr<S> &p, const Chunk<S> &c, bool sequence_rows) {
  return sequence_rows ? Mat<S>(p.x.v.topRows(c.n)) : c.V;
}

Reading v_index_reading(bool sequence_rows, const std::string &statement, Check check) {
  return {sequence_rows ? "v_i the i-th row of the sequence" : "v_i the i-th row of chunk [t]",
          statement + (sequence_rows ? " (v_i = row i of V)" : " (v_i = v^i_[t])"),
          std::move(check)};
}

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

std::vector<Claim> accumulator_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.fwd.S_two_accumulators", forward_src,
      R"(\mathbf{S}_t = \sum_{i=1}^{t} \text{Diag}(\boldsymbol{\eta}_t) \boldsymbol{u}_i \boldsymbol{k}_i^\top \text{Diag}(\boldsymbol{\epsilon}_i) \text{Diag}(\boldsymbol{\gamma}_t))",
      "S_t = sum_{i<=t} Diag(eta_t) u_i k_i^T Diag(eps_i) Diag(gamma_t) + sum_{i<=t} Diag(eta1_t) "
      "c_i a_i^T Diag(eps1_i) Diag(gamma1_t) with the note's setting (gamma = gamma1 = prod "
      "alpha, eps = eps1 = gamma^-1, eta = eta1 = I), u_i = v_i and c_i by the note's recursion "
      "over the whole sequence, S_0 = 0",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        const Mat<S> Gamma = cumulative_decay(p.x.g);
        const Mat<S> C = c_recursion(p.x.v, p.x.k, p.x.a, p.x.b, Gamma);
        std::vector<Mat<S>> l;
        for (Eigen::Index r = 0; r < p.x.q.rows(); ++r)
          l.push_back(accumulated(p.x.v, p.x.k, Gamma, r) + accumulated(C, p.x.a, Gamma, r));
        return sides_of(l, t.states);
      })));
  out.push_back(claim(
      "001.fwd.S_induction", forward_src,
      R"(\mathbf{S}_t &= \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) - \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) \boldsymbol{b}_t \boldsymbol{a}_t^\top)",
      "the induction's first two lines: S_t = S_{t-1} Diag(alpha_t) - S_{t-1} Diag(alpha_t) b_t "
      "a_t^T + v_t k_t^T = the four sums of the two accumulators times Diag(alpha_t) (and "
      "b_t a_t^T) + v_t k_t^T, S_{t-1} the assumed form with every parameter drawn (the last "
      "line, after the setting, is 001.fwd.S_two_accumulators)",
      check_of([](auto &d) {
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
          C1 += diag(eta1) * c.row(i).transpose() * a.row(i) * diag(Mat<S>(eps1.row(i))) *
                diag(gamma1);
        }
        const Mat<S> S_prev = U + C1;
        const Mat<S> line1 = S_prev * D_alpha - S_prev * D_alpha * ba + vk;
        const Mat<S> line2 = U * D_alpha + C1 * D_alpha - U * D_alpha * ba - C1 * D_alpha * ba + vk;
        const Mat<S> truth = S_prev * D_alpha * (identity<S>(K) - ba) + vk;
        return sides_of<S>({line1, line2}, {truth, truth});
      })));
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
    Claim c = claim(
        "001.fwd.S_r", forward_src,
        R"(&= \mathbf{S}_{[t-1]}^C \text{Diag}(\boldsymbol{\gamma}_{[t]}^r) + \sum_{i=1}^{r} \boldsymbol{v}_i)",
        statement + "; v_i carries no chunk index");
    for (const bool sequence_rows : {false, true})
      c.readings.push_back(v_index_reading(
          sequence_rows, statement, check_of([sequence_rows](auto &d) {
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
              const Mat<S> &truth = t.state_after(c.s + r + 1);
              return sides_of<S>({form1, form2}, {truth, truth});
            });
          })));
    out.push_back(c);
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
  out.push_back(claim(
      "001.fwd.W", forward_src,
      R"(\Rightarrow \mathbf{W}_{[t]} &= \overleftarrow{\mathbf{B}_{[t]}} - \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{W}_{[t]})",
      "W = B<- - (B<- A->^T . M_-1) W, hence W = (I + (B<- A->^T . M_-1))^-1 B<-, B<- = B . "
      "Gamma: both against the reference's w",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> B_left = c.left(c.B), BA = scores(B_left, c.right(c.A), c.M_1);
          return sides_of<S>({B_left - BA * c.W, inverse(Mat<S>(c.I() + BA)) * B_left}, {c.W, c.W});
        });
      })));
  out.push_back(claim(
      "001.fwd.C", forward_src,
      R"(\mathbf{C}_{[t]} &= - \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]} - \left()",
      "C = -(B<- K->^T . M_-1) V - (B<- A->^T . M_-1) C, hence C = -(I + (B<- A->^T . "
      "M_-1))^-1 (B<- K->^T . M_-1) V: both against the reference's c",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> B_left = c.left(c.B);
          const Mat<S> BA = scores(B_left, c.right(c.A), c.M_1);
          const Mat<S> BK = scores(B_left, c.right(c.K), c.M_1);
          return sides_of<S>(
              {Mat<S>(-BK * c.V - BA * c.C), Mat<S>(-inverse(Mat<S>(c.I() + BA)) * BK * c.V)},
              {c.C, c.C});
        });
      })));
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

// ---- Gated DPLR Backward ----

std::vector<Claim> key_result_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.bwd.key_results", backward_src("Key results for forward"), R"(Key results for forward)",
      "the key results chained chunk after chunk from the initial state: F = I + (B<- A->^T . "
      "M_-1), E = F^-1, W = E B<-, C = -E (B<- K->^T . M_-1) V, V_1 = V, V_2 = C - W S^T, then "
      "S^C_[t] and O_[t]: every O_[t] and the final state equal the recurrence's",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        Mat<S> state = p.x.h0.transpose(), O(p.x.q.rows(), p.x.v.cols());
        for (std::size_t i = 0; i < p.chunks.size(); ++i) {
          const Chunk<S> c = chunk_of(p, t, i);
          const Mat<S> B_left = c.left(c.B), Q_left = c.left(c.Q);
          const Mat<S> K_right = c.right(c.K), A_right = c.right(c.A);
          const Mat<S> F = c.I() + scores(B_left, A_right, c.M_1);
          const Mat<S> E = inverse(F);
          const Mat<S> W = E * B_left, C = -E * scores(B_left, K_right, c.M_1) * c.V;
          const Mat<S> V1 = c.V, V2 = C - W * state.transpose();
          O.middleRows(c.s, c.n) = Q_left * state.transpose() + scores(Q_left, K_right, c.M) * V1 +
                                   scores(Q_left, A_right, c.M) * V2;
          state = Mat<S>(state * c.DgammaC() + V1.transpose() * K_right * c.DgammaC() +
                         V2.transpose() * A_right * c.DgammaC());
        }
        return flat_sides<S>({O, state}, {t.o, t.states.back()});
      })));
  return out;
}

std::vector<Claim> wy_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dC", backward_src("For dC, dV_1, dW"),
      R"(\delta \mathbf{C}_{[t]} &= \delta \mathbf{V}_{[t],2} = \overrightarrow{\mathbf{A}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) \delta \mathbf{S}_{[t]}^{C \top})",
      "dC_[t] = dV_[t],2 = A-> Diag(gamma^C) dS^C_[t]^T + (Q<- A->^T . M)^T dO_[t], against the "
      "exact gradient with respect to the reference's c",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> &dS = g.after(c);
          return Sides<S>{c.right(c.A) * c.DgammaC() * dS.transpose() +
                              scores(c.left(c.Q), c.right(c.A), c.M).transpose() * c.dO,
                          g.rows(g.dC, c)};
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dV1", backward_src("For dC, dV_1, dW"),
      R"(\delta \mathbf{V}_{[t],1} & = \overrightarrow{\mathbf{K}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) \delta \mathbf{S}_{[t]}^{C \top})",
      "dV_[t],1 = K-> Diag(gamma^C) dS^C_[t]^T + (Q<- K->^T . M)^T dO_[t], against the exact "
      "gradient with respect to V as it enters the state and the output (not C)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> &dS = g.after(c);
          return Sides<S>{c.right(c.K) * c.DgammaC() * dS.transpose() +
                              scores(c.left(c.Q), c.right(c.K), c.M).transpose() * c.dO,
                          g.rows(g.dV1, c)};
        });
      }))));
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dW.corrected" : "001.bwd.dW", backward_src("For dC, dV_1, dW"),
        R"(\delta \mathbf{W}_{[t]} &= - \delta \mathbf{C}_{[t]} \mathbf{S}_{[t]}^{C})",
        corrected ? "dW_[t] = -dC_[t] S^C_[t-1] (the state before the chunk, which V_2 = C - W "
                    "S^C_[t-1]^T reads)"
                  : "dW_[t] = -dC_[t] S^C_[t] (the state after the chunk), dC the exact gradient",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            return Sides<S>{Mat<S>(-g.rows(g.dC, c) * (corrected ? c.S0 : c.S1)), g.rows(g.dW, c)};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dW";
    out.push_back(c);
  }
  out.push_back(gradient_claim(claim(
      "001.bwd.dE", backward_src("For dE, dF"),
      R"(\delta \mathbf{E}_{[t]} &= - \delta \mathbf{C}_{[t]} \mathbf{V}_{[t]}^\top)",
      "dE_[t] = -dC V^T (B<- K->^T . M_-1)^T + dW B<-^T (dC, dW the exact gradients), against "
      "the exact gradient with respect to every entry of E",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> B_left = c.left(c.B);
          return Sides<S>{-g.rows(g.dC, c) * c.V.transpose() *
                                  scores(B_left, c.right(c.K), c.M_1).transpose() +
                              g.rows(g.dW, c) * B_left.transpose(),
                          gradient_E(f, t, c.index)};
        });
      }))));
  // Two chunks of two rows: the degree the exact arithmetic tracks for -E^T dE E^T, a sum of
  // n^2 products of exact gradients, grows fast with n, and with it the Schwartz-Zippel bound.
  Claim dF = gradient_claim(claim(
      "001.bwd.dF", backward_src("For dE, dF"),
      R"(\delta \mathbf{F}_{[t]} &= - \mathbf{E}_{[t]}^\top \delta \mathbf{E}_{[t]} \mathbf{E}_{[t]}^\top)",
      "dF_[t] = -E^T dE E^T (dE the exact gradient), against the exact gradient with respect to "
      "every entry of F, E = F^-1",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{Mat<S>(-c.E.transpose() * gradient_E(f, t, c.index) * c.E.transpose()),
                          gradient_F(f, t, c.index)};
        });
      })));
  dF.sizes = {4, 2, 2, 2};
  out.push_back(dF);
  out.push_back(gradient_claim(claim(
      "001.bwd.dS", backward_src("For dS^C"),
      R"(\delta \mathbf{S}_{[t-1]}^{C} &= -\delta \mathbf{C}_{[t]}^\top \mathbf{W}_{[t]} + \delta \mathbf{S}_{[t]}^{C} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C))",
      "dS^C_[t-1] = -dC_[t]^T W_[t] + dS^C_[t] Diag(gamma^C_[t]) + dO_[t]^T Q<-_[t], and so "
      "dS^C_[t] = dS^C_[t+1] Diag(gamma^C_[t+1]) + dO_[t+1]^T Q<-_[t+1] - dC_[t+1]^T W_[t+1] "
      "(the same at t + 1), for every chunk down to the initial state; dC, dS^C_[t] exact",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{Mat<S>(-g.rows(g.dC, c).transpose() * c.W + g.after(c) * c.DgammaC() +
                                 c.dO.transpose() * c.left(c.Q)),
                          g.before(c)};
        });
      }))));
  return out;
}

std::vector<Claim> input_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dQ", backward_src("For dQ"),
      R"(\delta \overleftarrow{\mathbf{Q}_{[t]}} &= \delta \mathbf{O}_{[t]} \mathbf{S}_{[t-1]}^C)",
      "dQ<- = dO S^C_[t-1] + (dO V_1^T . M) K-> + (dO V_2^T . M) A->, dQ = dQ<- . Gamma, "
      "against the exact gradient of q",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const Mat<S> dq = input_gradient(p, field_q);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{c.left(dQ_left(c)), Mat<S>(dq.middleRows(c.s, c.n))};
        });
      }))));
  // "dB = dQ<- . Gamma" under "For dB": the symbol on its right is another gradient's.
  {
    Claim c = claim(
        "001.bwd.dB", backward_src("For dB"),
        R"(\delta \mathbf{B}_{[t]} &= \delta \overleftarrow{\mathbf{Q}_{[t]}} \odot \mathbf{\Gamma}_{[t]})",
        "dB<- = E^T dW - (E^T dC V^T . M_-1) K-> + (dF . M_-1) A-> (dW, dC, dF exact), then dB = "
        "dQ<- . Gamma, against the exact gradient of b");
    for (const bool literal : {true, false})
      c.readings.push_back(
          {literal ? "dQ<- as written (the gradient of Q<-)" : "dQ<- a slip for dB<-",
           literal ? "dB = dQ<- . Gamma, dQ<- the note's formula under For dQ"
                   : "dB = dB<- . Gamma, dB<- the line above",
           check_of([literal](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Backward<S> bw(d);
             const auto &p = bw.p;
             const auto &t = bw.t;
             const auto &f = bw.f;
             const ChunkGradients<S> g(p, t, f);
             const Mat<S> db = input_gradient(p, field_b);
             return per_chunk(p, t, [&](const Chunk<S> &c) {
               const Mat<S> left = literal ? dQ_left(c)
                                           : dB_left(c, g.rows(g.dW, c), g.rows(g.dC, c),
                                                     gradient_F(f, t, c.index));
               return Sides<S>{c.left(left), Mat<S>(db.middleRows(c.s, c.n))};
             });
           })});
    out.push_back(c);
  }
  // dK and dA: the terms through the state update S^C_[t] are missing.
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dK.corrected" : "001.bwd.dK", backward_src("For dK"),
        R"(\delta \overrightarrow{\mathbf{K}_{[t]}} &= \left(\delta \mathbf{O}_{[t]} \mathbf{V}_{[t],1}^\top \odot \mathbf{M}\right)^\top \overleftarrow{\mathbf{Q}_{[t]}})",
        std::string("dK-> = (dO V_1^T . M)^T Q<- - (E^T dC V^T . M_-1)^T B<-") +
            (corrected ? " + V_1 dS^C_[t] Diag(gamma^C) (through S^C_[t])" : "") +
            ", dK = dK-> / Gamma (dC, dS exact), against the exact gradient of k",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          const Mat<S> dk = input_gradient(p, field_k);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            Mat<S> dK_right =
                scores(c.dO, c.V, c.M).transpose() * c.left(c.Q) -
                scores(Mat<S>(c.E.transpose() * g.rows(g.dC, c)), c.V, c.M_1).transpose() *
                    c.left(c.B);
            if (corrected)
              dK_right += c.V * g.after(c) * c.DgammaC();
            return Sides<S>{c.right(dK_right), Mat<S>(dk.middleRows(c.s, c.n))};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dK";
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dA.corrected" : "001.bwd.dA", backward_src("For dA"),
        R"(\delta \overrightarrow{\mathbf{A}_{[t]}} &= \left(\delta \mathbf{O}_{[t]} \mathbf{V}_{[t],2}^\top \odot \mathbf{M}\right)^\top \overleftarrow{\mathbf{Q}_{[t]}})",
        std::string("dA-> = (dO V_2^T . M)^T Q<- + (dF . M_-1)^T B<-") +
            (corrected ? " + V_2 dS^C_[t] Diag(gamma^C) (through S^C_[t])" : "") +
            ", dA = dA-> / Gamma (dF, dS exact), against the exact gradient of a",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          const Mat<S> da = input_gradient(p, field_a);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> dF = gradient_F(f, t, c.index);
            Mat<S> dA_right = scores(c.dO, c.V2(), c.M).transpose() * c.left(c.Q) +
                              Mat<S>(dF.cwiseProduct(c.M_1)).transpose() * c.left(c.B);
            if (corrected)
              dA_right += c.V2() * g.after(c) * c.DgammaC();
            return Sides<S>{c.right(dA_right), Mat<S>(da.middleRows(c.s, c.n))};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dA";
    out.push_back(c);
  }
  out.push_back(gradient_claim(claim(
      "001.bwd.dV", backward_src("For dV"),
      R"(\delta \mathbf{V}_{[t]} = \delta \mathbf{V}_{[t],1} - \left()",
      "dV = dV_1 - (B<- K->^T . M_-1)^T E^T dC (dV_1, dC exact), against the exact gradient of v",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        const Mat<S> dv = input_gradient(p, field_v);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{g.rows(g.dV1, c) - scores(c.left(c.B), c.right(c.K), c.M_1).transpose() *
                                                 c.E.transpose() * g.rows(g.dC, c),
                          Mat<S>(dv.middleRows(c.s, c.n))};
        });
      }))));
  return out;
}

std::vector<Claim> gate_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dgammaC", backward_src("For dGamma"),
      R"(\delta \boldsymbol{\gamma}_{[t]}^C &= \text{diag}\left( \left( \mathbf{S}_{[t-1]}^C + \mathbf{V}_{[t],1}^\top)",
      "d gamma^C_[t] (the extra Diag(gamma^C) of S^C_[t]) = diag((S^C_[t-1] + V_1^T K-> + "
      "V_2^T A->)^T dS^C_[t]) = (gamma^C)^-1 . diag(S^C_[t]^T dS^C_[t]) (dS exact), against the "
      "exact derivative of the loss with respect to that factor",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> dS = state_gradient(p, t, c.s + c.n);
          const Mat<S> X =
              c.S0 + c.V.transpose() * c.right(c.K) + c.V2().transpose() * c.right(c.A);
          const Mat<S> truth = extra_gammaC_gradient(p, c);
          return sides_of<S>(
              {diag_row(Mat<S>(X.transpose() * dS)),
               c.gammaC().cwiseInverse().cwiseProduct(diag_row(Mat<S>(c.S1.transpose() * dS)))},
              {truth, truth});
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dGamma_wo_extra", backward_src("For dGamma"),
      R"(\left.\delta \mathbf{\Gamma}_{[t]}\right|_{\text{w/o extra} \boldsymbol{\gamma}_{[t]}^C} &= \delta \overleftarrow{\mathbf{Q}_{[t]}} \odot \mathbf{Q}_{[t]})",
      "dGamma|_{w/o extra gamma^C} = dQ<- . Q + dB<- . B - dK-> . K / Gamma / Gamma - dA-> . A "
      "/ Gamma / Gamma (the arrowed gradients exact), against the exact dGamma = d log Gamma / "
      "Gamma less the extra gamma^C's derivative on the last row",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        const InputGradients<S> grad(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> dQ = grad.rows(grad.dq, c), dB = grad.rows(grad.db, c);
          const Mat<S> dK = grad.rows(grad.dk, c), dA = grad.rows(grad.da, c);
          const Mat<S> Gamma2 = c.Gamma.cwiseProduct(c.Gamma);
          const Mat<S> note = c.right(dQ).cwiseProduct(c.Q) + c.right(dB).cwiseProduct(c.B) -
                              c.left(dK).cwiseProduct(c.K).cwiseQuotient(Gamma2) -
                              c.left(dA).cwiseProduct(c.A).cwiseQuotient(Gamma2);
          const Mat<S> truth = dlog_Gamma(grad.dg, c).cwiseQuotient(c.Gamma) -
                               on_last_row(c, extra_gammaC_gradient(p, c));
          return Sides<S>{note, truth};
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dlogGamma", backward_src("For dGamma"),
      R"(\delta \log \mathbf{\Gamma}_{[t]} &= \delta \mathbf{\Gamma}_{[t]} \odot \mathbf{\Gamma}_{[t]})",
      "d log Gamma = dGamma . Gamma (dGamma the line above plus [0, ..., d gamma^C]) = dQ . Q + "
      "dB . B - dK . K - dA . A + [0, ..., diag(S^C_[t]^T dS^C_[t])] (dQ, dB, dK, dA, dS "
      "exact), against the exact gradient of the gates, d log gamma^r = dg_r - dg_{r+1}",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        const InputGradients<S> grad(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> dQ = grad.rows(grad.dq, c), dB = grad.rows(grad.db, c);
          const Mat<S> dK = grad.rows(grad.dk, c), dA = grad.rows(grad.da, c);
          const Mat<S> dS = state_gradient(p, t, c.s + c.n);
          const Mat<S> state_term = diag_row(Mat<S>(c.S1.transpose() * dS));
          const Mat<S> Gamma2 = c.Gamma.cwiseProduct(c.Gamma);
          const Mat<S> dGamma =
              c.right(dQ).cwiseProduct(c.Q) + c.right(dB).cwiseProduct(c.B) -
              c.left(dK).cwiseProduct(c.K).cwiseQuotient(Gamma2) -
              c.left(dA).cwiseProduct(c.A).cwiseQuotient(Gamma2) +
              on_last_row(c, Mat<S>(c.gammaC().cwiseInverse().cwiseProduct(state_term)));
          const Mat<S> products = dQ.cwiseProduct(c.Q) + dB.cwiseProduct(c.B) -
                                  dK.cwiseProduct(c.K) - dA.cwiseProduct(c.A) +
                                  on_last_row(c, state_term);
          const Mat<S> truth = dlog_Gamma(grad.dg, c);
          return sides_of<S>({dGamma.cwiseProduct(c.Gamma), products}, {truth, truth});
        });
      }))));
  return out;
}

// ---- Discussions ----

std::vector<Claim> kda_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.kda.recurrence", kda_src,
      R"(\boldsymbol{a}_t &= \boldsymbol{k}_t ,\quad \boldsymbol{b}_t = \beta_t \boldsymbol{k}_t ,\quad \boldsymbol{v}_t = \beta_t \boldsymbol{v'}_t)",
      "with a_t = k_t, b_t = beta_t k_t, v_t = beta_t v'_t the note's S_t = S_{t-1} "
      "Diag(alpha_t)(I - b_t a_t^T) + v_t k_t^T and o_t = S_t q_t are KDA's (the reference's "
      "kda recurrence, transposed)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const NoteRun<S> note = note_recurrence(r.p.x);
        std::vector<Mat<S>> states;
        for (Eigen::Index t = 1; t <= r.kda.q.rows(); ++t)
          states.push_back(
              kda::recurrent_head(rows_of(r.kda, 0, t, r.kda.h0), S(1)).ht.transpose());
        return flat_sides<S>({stack(note.states), note.o},
                             {stack(states), kda::recurrent_head(r.kda, S(1)).o});
      })));
  out.push_back(claim(
      "001.kda.E", kda_src,
      R"(= \left( \mathbf{I} + \text{Diag}(\boldsymbol{\beta}_{[t]}) \left( \overleftarrow{\mathbf{K}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \right)^{-1})",
      "E_[t] = (I + (B<- A->^T . M_-1))^-1 = (I + Diag(beta)(K<- K->^T . M_-1))^-1, both "
      "against kda's A (solve_tril)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> &A = r.st.A[c.index];
          const Mat<S> KK = scores(c.left(c.K), c.right(c.K), c.M_1);
          return sides_of<S>({inverse(Mat<S>(c.I() + scores(c.left(c.B), c.right(c.A), c.M_1))),
                              inverse(Mat<S>(c.I() + r.beta(c) * KK))},
                             {A, A});
        });
      })));
  out.push_back(claim(
      "001.kda.C", kda_src,
      R"(= - \mathbf{E}_{[t]} \text{Diag}(\boldsymbol{\beta}_{[t]}) \left( \overleftarrow{\mathbf{K}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]})",
      "C_[t] = -E (B<- K->^T . M_-1) V = -E Diag(beta)(K<- K->^T . M_-1) V (E kda's A, V = "
      "Diag(beta) V'), both against the reference's c of the substituted DPLR",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> &E = r.st.A[c.index];
          const Mat<S> KK = scores(c.left(c.K), c.right(c.K), c.M_1);
          return sides_of<S>({Mat<S>(-E * scores(c.left(c.B), c.right(c.K), c.M_1) * c.V),
                              Mat<S>(-E * r.beta(c) * KK * c.V)},
                             {c.C, c.C});
        });
      })));
  out.push_back(
      claim("001.kda.U", kda_src, R"(\mathbf{U}_{[t]} &:= \mathbf{V}_{[t]} + \mathbf{C}_{[t]})",
            "U_[t] := V + C = (I - E Diag(beta)(K<- K->^T . M_-1)) V = E (E^-1 - Diag(beta)(K<- "
            "K->^T . M_-1)) V = E V (E kda's A, C the reference's), every form against kda's u",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const KdaCase<S> r = draw_kda(d);
              const Truth<S> t(r.p);
              return per_chunk(r.p, t, [&](const Chunk<S> &c) {
                const Mat<S> &E = r.st.A[c.index];
                const Mat<S> N = r.beta(c) * scores(c.left(c.K), c.right(c.K), c.M_1);
                const Mat<S> u = r.st.u.middleRows(c.s, c.n);
                return sides_of<S>({Mat<S>(c.V + c.C), Mat<S>((c.I() - E * N) * c.V),
                                    Mat<S>(E * (inverse(E) - N) * c.V), Mat<S>(E * c.V)},
                                   {u, u, u, u});
              });
            })));
  out.push_back(claim(
      "001.kda.V_new", kda_src,
      R"(\mathbf{V}_{[t],new} &:= \mathbf{V}_{[t],1} + \mathbf{V}_{[t],2})",
      "V_new := V_1 + V_2 = V + C - W S^C_[t-1]^T = U - W S^C_[t-1]^T (W, C, V_2 the "
      "reference's DPLR stages, U kda's u), every form against kda's v_new",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> v_new = r.st.v_new.middleRows(c.s, c.n);
          const Mat<S> WS = c.W * c.S0.transpose();
          return sides_of<S>({Mat<S>(c.V + t.st.v2.middleRows(c.s, c.n)), Mat<S>(c.V + c.C - WS),
                              Mat<S>(r.st.u.middleRows(c.s, c.n) - WS)},
                             {v_new, v_new, v_new});
        });
      })));
  return out;
}

std::vector<Claim> no_gate_claims() {
  std::vector<Claim> out;
  out.push_back(
      claim("001.nogate.recurrence", no_gate_src,
            R"(\boldsymbol{b}_t &= \text{Diag}(\boldsymbol{\alpha_t})^{-1} \boldsymbol{d}_t)",
            "with b_t = Diag(alpha_t)^-1 d_t, S_{t-1} Diag(alpha_t)(I - b_t a_t^T) + v_t k_t^T = "
            "S_{t-1}(Diag(alpha_t) - d_t a_t^T) + v_t k_t^T: both against the reference's no_gate "
            "recurrence",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const Dplr<S> p = draw_dplr(d); // x.b holds d
              const Truth<S> t(p, Parameterisation::no_gate);
              Head<S> gated = p.x;
              gated.b = p.x.b.cwiseQuotient(exp_of(p.x.g));
              std::vector<Mat<S>> absorbed;
              Mat<S> state = p.x.h0.transpose();
              for (Eigen::Index j = 0; j < p.x.q.rows(); ++j) {
                const Mat<S> D_alpha = diag(exp_of(Mat<S>(p.x.g.row(j))));
                state = Mat<S>(state * (D_alpha - p.x.b.row(j).transpose() * p.x.a.row(j)) +
                               p.x.v.row(j).transpose() * p.x.k.row(j));
                absorbed.push_back(state);
              }
              return sides_of<S>({stack(note_recurrence(gated).states), stack(absorbed)},
                                 {stack(t.states), stack(t.states)});
            })));
  // F and C write D where B<- = B . Gamma, B = Diag(alpha)^-1 D, is needed.
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "001.nogate.F.corrected" : "001.nogate.F", no_gate_src,
        R"(\mathbf{F}_{[t]} &= \mathbf{I} + \left(\mathbf{D}_{[t]} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right))",
        corrected ? "F_[t] = I + (B<- A->^T . M_-1), B<- = (D / alpha) . Gamma (row r: d_r "
                    "gamma^{r-1}), against the reference's F"
                  : "F_[t] = I + (D A->^T . M_-1), against the reference's F",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Dplr<S> p = draw_dplr(d);
          const Truth<S> t(p, Parameterisation::no_gate);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> D = corrected ? c.left(B_of_D(c)) : c.B;
            return Sides<S>{Mat<S>(c.I() + scores(D, c.right(c.A), c.M_1)), c.F};
          });
        }));
    if (corrected)
      c.correction_of = "001.nogate.F";
    out.push_back(c);
  }
  // W = E B<-: the section leaves B<- to be read with B = Diag(alpha)^-1 D, or as D . Gamma.
  {
    Claim c = claim(
        "001.nogate.W", no_gate_src,
        R"(\mathbf{W}_{[t]} &= \mathbf{E}_{[t]} \overleftarrow{\mathbf{B}_{[t]}} ,\quad \mathbf{C}_{[t]} = - \mathbf{E}_{[t]} \left( \mathbf{D}_{[t]})",
        "W_[t] = E B<- (E the reference's); the section defines arrows for Q and K only");
    for (const bool from_b : {true, false})
      c.readings.push_back(
          {from_b ? "B<- = B . Gamma, b_t = Diag(alpha_t)^-1 d_t" : "B<- = D . Gamma",
           from_b ? "W = E ((D / alpha) . Gamma)" : "W = E (D . Gamma)",
           check_of([from_b](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Dplr<S> p = draw_dplr(d);
             const Truth<S> t(p, Parameterisation::no_gate);
             return per_chunk(p, t, [&](const Chunk<S> &c) {
               return Sides<S>{c.E * c.left(from_b ? B_of_D(c) : c.B), c.W};
             });
           })});
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "001.nogate.C.corrected" : "001.nogate.C", no_gate_src,
        R"(\mathbf{C}_{[t]} = - \mathbf{E}_{[t]} \left( \mathbf{D}_{[t]} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]})",
        corrected ? "C_[t] = -E (B<- K->^T . M_-1) V, B<- = (D / alpha) . Gamma (E the "
                    "reference's), against the reference's c"
                  : "C_[t] = -E (D K->^T . M_-1) V (E the reference's), against the reference's c",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Dplr<S> p = draw_dplr(d);
          const Truth<S> t(p, Parameterisation::no_gate);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> D = corrected ? c.left(B_of_D(c)) : c.B;
            return Sides<S>{Mat<S>(-c.E * scores(D, c.right(c.K), c.M_1) * c.V), c.C};
          });
        }));
    if (corrected)
      c.correction_of = "001.nogate.C";
    out.push_back(c);
  }
  return out;
}

} // namespace

std::vector<Claim> seed_001_claims() {
  std::vector<Claim> out;
  for (auto part : {recurrence_claims, wy_claims, accumulator_claims, state_output_claims,
                    wc_matrix_claims, key_result_claims, wy_gradient_claims, input_gradient_claims,
                    gate_gradient_claims, kda_claims, no_gate_claims})
    for (Claim &c : part())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
