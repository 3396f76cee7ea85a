// ruleproof: the displayed equations of the seed notes that need no claim, each with its
// reason (proofs/coverage.hpp). Each quote is a verbatim excerpt of the row it is for; a
// reason holds wherever its quote's text appears. Only definitions and notation are here: a
// row that states something that could be false is a claim.
#include "proofs/coverage.hpp"

namespace ruleproof::proofs::notes {

namespace {
const std::string n000 = "000_e483dc44522e9a80.txt", n001 = "001_33bdf09da33bec83.txt",
                  n002 = "002_a013704b0210cf80.txt", n003 = "003_550f12c2ed5852f3.txt";
} // namespace

std::vector<NoClaimNeeded> no_claim_needed() {
  return {
      // ---- 000: the WY representation's vectors are defined by their recursions ----
      {n000,
       R"(\mathbf{w}_{[t]}^r &= \beta_{[t]}^r \left( \text{Diag}(\boldsymbol{\alpha}_{[t]}^{1:r}) \mathbf{v}_{[t]}^r)",
       "a definition: the recursion that defines w_r; 000.oja.wy_D checks the form of D^r "
       "built from it, and 000.oja.ut_W the UT transform's W against it"},
      {n000, R"(\mathbf{u}_{[t]}^r &= \beta_{[t]}^r \left( \mathbf{k}_{[t]}^r - \sum_{i=1}^{r-1})",
       "a definition: the recursion that defines u_r; 000.oja.wy_H checks the form of H^r "
       "built from it, and 000.oja.ut_U the UT transform's U against it"},

      // ---- 001: the rule's output, the parameters the note sets, notation ----
      {n001, R"(\boldsymbol{o}_t &= \mathbf{S}_{t}\boldsymbol{q}_t)",
       "a definition: the rule's output, part of the recurrence 001.fwd.recurrence checks"},
      {n001,
       R"(\text{Diag}(\boldsymbol{\lambda}_{[t]}^i) &= \text{Diag}(\boldsymbol{\gamma}_{[t]}^i) = \prod_{j=1}^i)",
       "a definition: the note sets lambda^i = gamma^i, the chunk's cumulative product of "
       "alpha; 001.fwd.w and 001.fwd.P_wy check the WY form under this setting"},
      {n001, R"(\text{Diag}(\boldsymbol{\eta}_{[t]}^i) = \mathbf{I})",
       "a definition: the note sets eta^i = I (001.fwd.w, 001.fwd.P_wy use it)"},
      {n001,
       R"(\text{Diag}(\boldsymbol{\epsilon}_{[t]}^i) = \text{Diag}(\boldsymbol{\gamma}_{[t]}^i)^{-1})",
       "a definition: the note sets epsilon^i = (gamma^i)^-1 (001.fwd.w, 001.fwd.P_wy use it)"},
      {n001,
       R"(\text{Diag}(\boldsymbol{\gamma}_t) &= \text{Diag}(\boldsymbol{\gamma^1}_t) = \prod_{i=1}^t \text{Diag}(\boldsymbol{\alpha}_i))",
       "a definition: the note sets gamma_t = gamma^1_t, the cumulative product of alpha; "
       "001.fwd.u and 001.fwd.c check the two accumulators under this setting"},
      {n001,
       R"(\text{Diag}(\boldsymbol{\epsilon}_t) = \text{Diag}(\boldsymbol{\epsilon^1}_t) = \text{Diag}(\boldsymbol{\gamma}_t)^{-1})",
       "a definition: the note sets epsilon_t = epsilon^1_t = gamma_t^-1 (001.fwd.u, "
       "001.fwd.c use it)"},
      {n001,
       R"(\text{Diag}(\boldsymbol{\eta}_t) &= \text{Diag}(\boldsymbol{\eta^1}_t) = \mathbf{I})",
       "a definition: the note sets eta_t = eta^1_t = I (001.fwd.u, 001.fwd.c use it)"},
      {n001,
       R"(\mathbf{\Gamma}_{[t]} &= [ \boldsymbol{\gamma}_{[t]}^1, \boldsymbol{\gamma}_{[t]}^2, ..., \boldsymbol{\gamma}_{[t]}^C ]^\top)",
       "notation: Gamma stacks the chunk's cumulative gates gamma^1 .. gamma^C"},
      {n001, R"(\overleftarrow{\square_{[t]}} &= \square_{[t]} \odot \mathbf{\Gamma}_{[t]} ,\quad)",
       "notation: the arrows scale a chunk's rows by Gamma (left arrow) or divide by it (right "
       "arrow)"},
      {n001, R"(\overrightarrow{\square_{[t]}} = \square_{[t]} \oslash \mathbf{\Gamma}_{[t]})",
       "notation: the right arrow divides a chunk's rows by Gamma"},
      {n001,
       R"(\mathbf{F}_{[t]} &= \mathbf{I} + \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right))",
       "a definition: F names the matrix whose inverse is E (001.fwd.E checks E)"},
      {n001, R"(\mathbf{E}_{[t]} = \mathbf{F}_{[t]}^{-1})", "a definition: E is F's inverse"},
      {n001, R"(\mathbf{V}_{[t],1} &:= \mathbf{V}_{[t]})", "a definition (:=) of V_[t],1"},
      {n001,
       R"(\mathbf{V}_{[t],2} := \left(\mathbf{C}_{[t]} - \mathbf{W}_{[t]} \mathbf{S}_{[t-1]}^{C \top} \right))",
       "a definition (:=) of V_[t],2"},

      // ---- 002: the projections and the names the derivation introduces ----
      {n002, R"(q_t, k_t, v_t = x_t W_Q, x_t W_K, x_t W_V,)",
       "a definition: the projections of the input; the rules take q, k and v as given"},
      {n002,
       R"(&\text{Letting } \boldsymbol{S}_t = \sum_{i=1}^t \phi(\boldsymbol{k}_i)^\top \boldsymbol{v}_i \text{ and })",
       "a definition of S_t and z_t as sums; the recurrence they satisfy is the next lines' "
       "claim"},
      {n002, R"(&\text{Letting } \boldsymbol{b}_t := \prod_{j=1}^t \boldsymbol{\alpha}_j,)",
       "a definition (:=) of b_t, the cumulative product of the gates"},

      // ---- 003: notation ----
      {n003,
       R"(\overleftarrow{\square_{[t]}} &= \text{Diag}(\boldsymbol{\gamma}_{[t]}) \square_{[t]} ,\quad)",
       "notation: the arrows scale a chunk's rows by gamma (left arrow) or divide by it (right "
       "arrow)"},
  };
}

} // namespace ruleproof::proofs::notes
