// Properties of softmax attention (reference/softmax_attn), in float128, the truth.
//
// Tolerances, derived. Each score s_ij = q~_i^T k_j - m (i - j) + G_i - G_j is computed
// with absolute error at most delta = gamma_{K + L + 4} sigma, sigma the largest sum of the
// absolute values of its terms (|q~||k| summed over features, m |i - j|, and |G_i| + |G_j|
// with G a cumulative sum of L gates). exp turns that into a relative error delta in each
// weight, the normalisation into 2 delta + gamma_L in each probability, so a form's output
// differs from the exact one by at most (2 delta + gamma_n) M_i with n = 2 L + V + 8 and
// M_i = sum_j P_ij |v'_j|_max (rotations add gamma_4 relative). Two forms differ by twice
// that. The analytic backward differs from the dual-number derivative by at most
// 2 (2 delta + gamma_n') times the magnitude of each gradient's terms (below), n' = 2 n.
#include <rapidcheck/catch.h>

#include "checks/generators.hpp"

#include "reference/core/compare.hpp"
#include "reference/core/float128.hpp"
#include "reference/core/gradients.hpp"
#include "reference/softmax_attn/softmax_attn.hpp"

using namespace ruleproof;
using S = float128;

namespace {

struct SoftmaxCase {
  std::size_t B, T, H, K, V, C;
  softmax_attn::Encoding enc;
  bool gated;
  std::vector<std::int64_t> cu_seqlens;
  std::vector<double> q, k, v, g, d_o;
};

std::ostream &operator<<(std::ostream &os, const SoftmaxCase &c) {
  os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K << " V=" << c.V << " C=" << c.C
     << " alibi=" << c.enc.alibi_slope << " rope_qk=" << c.enc.rope_qk
     << " rope_vo=" << c.enc.rope_vo << " gated=" << c.gated << " cu_seqlens=[";
  for (auto x : c.cu_seqlens)
    os << x << ' ';
  os << "]\n q=";
  for (double x : c.q)
    os << x << ' ';
  os << "\n k=";
  for (double x : c.k)
    os << x << ' ';
  os << "\n v=";
  for (double x : c.v)
    os << x << ' ';
  os << "\n g=";
  for (double x : c.g)
    os << x << ' ';
  return os;
}

using checks::gen::size_in; // a size in [lo, hi], whatever the RapidCheck size

/// m/8, m in [-8, 8]: exact in every scalar type.
rc::Gen<std::vector<double>> values(std::size_t n, int lo = -8, int hi = 8) {
  return rc::gen::container<std::vector<double>>(
      n, rc::gen::map(rc::gen::resize(100, rc::gen::inRange(lo, hi + 1)),
                      [](int m) { return m / 8.0; }));
}

rc::Gen<SoftmaxCase> cases(bool varlen) {
  return rc::gen::exec([varlen] {
    SoftmaxCase c;
    c.B = varlen ? 1 : *size_in(1, 2);
    c.H = *size_in(1, 2);
    c.K = 2 * *size_in(1, 2);
    c.V = 2 * *size_in(1, 2);
    c.T = *size_in(varlen ? 0 : 1, 12);
    c.C = *size_in(1, c.T + 2);
    c.enc.alibi_slope = *size_in(0, 4) / 8.0;
    c.enc.rope_qk = *rc::gen::arbitrary<bool>();
    c.enc.rope_vo = *rc::gen::arbitrary<bool>();
    c.enc.rope_base = 100;
    c.gated = *rc::gen::arbitrary<bool>();
    if (varlen) {
      c.cu_seqlens = {0};
      const std::size_t N = *size_in(1, 4);
      for (std::size_t n = 0; n + 1 < N; ++n)
        c.cu_seqlens.push_back(c.cu_seqlens.back() +
                               static_cast<std::int64_t>(*size_in(0, c.T)) % (c.T + 1));
      std::sort(c.cu_seqlens.begin(), c.cu_seqlens.end());
      for (auto &x : c.cu_seqlens)
        x = std::min<std::int64_t>(x, c.T);
      c.cu_seqlens.push_back(c.T);
    }
    const std::size_t rows = c.B * c.T * c.H;
    c.q = *values(rows * c.K);
    c.k = *values(rows * c.K);
    c.v = *values(rows * c.V);
    c.g = c.gated ? *values(rows, -16, -1) : std::vector<double>();
    c.d_o = *values(rows * c.V);
    return c;
  });
}

Tensor<S> tensor(const Shape &shape, const std::vector<double> &x) {
  Tensor<S> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = S(x[i]);
  return t;
}

Inputs<S> inputs_of(const SoftmaxCase &c) {
  Inputs<S> in;
  in.q = tensor({c.B, c.T, c.H, c.K}, c.q);
  in.k = tensor({c.B, c.T, c.H, c.K}, c.k);
  in.v = tensor({c.B, c.T, c.H, c.V}, c.v);
  if (c.gated)
    in.g = tensor({c.B, c.T, c.H}, c.g);
  return in;
}

Options options_of(const SoftmaxCase &c) {
  Options o;
  o.chunk_size = c.C;
  o.cu_seqlens = c.cu_seqlens;
  return o;
}

/// The score error delta and the per-element output bound of the comment at the top.
struct Bounds {
  S delta, gamma;      ///< the score's absolute error, the chain's relative error
  Tensor<S> magnitude; ///< M_i = sum_j P_ij |v'_j|_max
  Tensor<S> output;    ///< allowed |o_a - o_b|, element by element
};

Bounds bounds_of(const SoftmaxCase &c) {
  using std::abs;
  const Inputs<S> in = inputs_of(c);
  const Options opts = options_of(c);
  const S scale = scale_of<S>(opts, c.K);
  Bounds b{S(0), gamma_n<S>(2.0 * c.T + c.V + 8), Tensor<S>({c.B, c.T, c.H, c.V}), {}};
  S sigma(0);
  for (const Sequence &seq : sequences_of(c.B, c.T, opts))
    for (std::size_t h = 0; h < c.H; ++h) {
      const Head<S> x = slice_head(in, seq, h, softmax_attn::signature_of(in));
      const softmax_attn::Encoded<S> e = softmax_attn::encode(x, scale, c.enc);
      const Mat<S> P = softmax_attn::probabilities(e, c.enc);
      S G_max(0);
      for (Eigen::Index i = 0; i < e.G.size(); ++i)
        G_max = abs(e.G(i)) > G_max ? S(abs(e.G(i))) : G_max;
      for (Eigen::Index i = 0; i < P.rows(); ++i)
        for (Eigen::Index j = 0; j <= i; ++j) {
          const S terms = e.q.row(i).cwiseAbs().dot(e.k.row(j).cwiseAbs()) +
                          S(c.enc.alibi_slope) * S(static_cast<int>(i - j)) + S(2) * G_max;
          sigma = terms > sigma ? terms : sigma;
        }
      const Mat<S> magnitude = P * e.v.cwiseAbs().rowwise().maxCoeff().replicate(1, c.V);
      for (std::size_t t = 0; t < seq.length(); ++t)
        for (std::size_t d = 0; d < c.V; ++d)
          b.magnitude(seq.batch, seq.begin + t, h, d) = magnitude(t, d);
    }
  b.delta = gamma_n<S>(c.K + c.T + 4.0) * sigma;
  const S relative = S(2) * (S(2) * b.delta + b.gamma + gamma_n<S>(4));
  b.output = b.magnitude;
  for (std::size_t i = 0; i < b.output.size(); ++i)
    b.output[i] *= relative;
  return b;
}

void log_seed() {
  const auto seed = rc::detail::configuration().testParams.seed;
  RC_LOG() << "RapidCheck seed " << seed << " (replay: RC_PARAMS=\"seed=" << seed << "\")\n";
}

void expect_holds(const char *what, const Discrepancy &d) {
  RC_LOG() << what << ": max |a - b| = " << d.max_abs_error << ", worst / bound "
           << d.worst_over_bound << " at element " << d.worst_index << " (" << d.value_a << " vs "
           << d.value_b << ")\n";
  RC_ASSERT(d.holds());
}

} // namespace

TEST_CASE("softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size") {
  rc::prop("every encoding, every chunk size", [] {
    log_seed();
    const SoftmaxCase c = *cases(false);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of(c);
    const Options opts = options_of(c);
    const Bounds b = bounds_of(c);
    const auto bound = [&](std::size_t i) { return b.output[i]; };
    const Tensor<S> truth = softmax_attn::recurrent(in, opts, c.enc).o;
    expect_holds("parallel", compare(softmax_attn::parallel(in, opts, c.enc).o, truth, bound));
    expect_holds("chunk", compare(softmax_attn::chunk(in, opts, c.enc).o, truth, bound));
  });
}

TEST_CASE("softmax_alibi_slope_m_equals_constant_gate_exp_minus_m") {
  rc::prop("ALiBi as scalar gating", [] {
    log_seed();
    SoftmaxCase c = *cases(false);
    c.gated = false;
    c.g.clear();
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of(c);
    const Options opts = options_of(c);
    softmax_attn::Encoding no_alibi = c.enc;
    no_alibi.alibi_slope = 0;
    Inputs<S> gated = in;
    gated.g = Tensor<S>({c.B, c.T, c.H}, S(-c.enc.alibi_slope)); // b_ij = prod exp(-m)
    const Bounds b = bounds_of(c);
    expect_holds("alibi vs gate", compare(softmax_attn::parallel(gated, opts, no_alibi).o,
                                          softmax_attn::parallel(in, opts, c.enc).o,
                                          [&](std::size_t i) { return b.output[i]; }));
  });
}

TEST_CASE("softmax_varlen_equals_each_sequence_alone") {
  rc::prop("cu_seqlens, empty sequences included", [] {
    log_seed();
    const SoftmaxCase c = *cases(true);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of(c);
    const Tensor<S> packed = softmax_attn::chunk(in, options_of(c), c.enc).o;
    for (std::size_t n = 0; n + 1 < c.cu_seqlens.size(); ++n) {
      const std::size_t t0 = c.cu_seqlens[n], t1 = c.cu_seqlens[n + 1];
      Inputs<S> one;
      const auto cut = [&](const Tensor<S> &x) {
        if (x.empty())
          return Tensor<S>();
        Shape shape = x.shape();
        shape[1] = t1 - t0;
        Tensor<S> y(shape);
        const std::size_t row = element_count(Shape(x.shape().begin() + 2, x.shape().end()));
        std::copy(x.data() + t0 * row, x.data() + t1 * row, y.data());
        return y;
      };
      one.q = cut(in.q), one.k = cut(in.k), one.v = cut(in.v), one.g = cut(in.g);
      Options o;
      o.chunk_size = c.C;
      const Tensor<S> alone = softmax_attn::chunk(one, o, c.enc).o;
      RC_ASSERT(identical(alone, cut(packed)));
    }
  });
}

TEST_CASE("softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged") {
  rc::prop("causality, every form", [] {
    log_seed();
    const SoftmaxCase c = *cases(false);
    const std::size_t P = *size_in(0, c.T);
    RC_LOG() << c << "\nP=" << P << "\n";
    const Inputs<S> in = inputs_of(c);
    Inputs<S> changed = in;
    for (Tensor<S> *x : {&changed.q, &changed.k, &changed.v, &changed.g})
      for (std::size_t i = 0; i < x->size(); ++i) {
        const std::size_t t =
            (i / element_count(Shape(x->shape().begin() + 2, x->shape().end()))) % c.T;
        if (t >= P)
          (*x)[i] = x == &changed.g ? S(-3) : S(7) - (*x)[i];
      }
    const Options opts = options_of(c);
    const auto early = [&](const Tensor<S> &o) {
      Tensor<S> e({c.B, P, c.H, c.V});
      for (std::size_t b = 0; b < c.B; ++b)
        for (std::size_t t = 0; t < P; ++t)
          for (std::size_t h = 0; h < c.H; ++h)
            for (std::size_t d = 0; d < c.V; ++d)
              e(b, t, h, d) = o(b, t, h, d);
      return e;
    };
    RC_ASSERT(identical(early(softmax_attn::recurrent(in, opts, c.enc).o),
                        early(softmax_attn::recurrent(changed, opts, c.enc).o)));
    RC_ASSERT(identical(early(softmax_attn::parallel(in, opts, c.enc).o),
                        early(softmax_attn::parallel(changed, opts, c.enc).o)));
    RC_ASSERT(identical(early(softmax_attn::chunk(in, opts, c.enc).o),
                        early(softmax_attn::chunk(changed, opts, c.enc).o)));
  });
}

TEST_CASE("softmax_analytic_backward_equals_dual_numbers_equals_finite_differences") {
  rc::prop("dq, dk, dv, dg", [] {
    log_seed();
    SoftmaxCase c = *cases(false);
    c.T = std::min<std::size_t>(c.T, 6);
    const std::size_t rows = c.B * c.T * c.H;
    c.q.resize(rows * c.K), c.k.resize(rows * c.K), c.v.resize(rows * c.V);
    c.d_o.resize(rows * c.V);
    if (c.gated)
      c.g.resize(rows);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of(c);
    const Options opts = options_of(c);
    Cotangents<S> ct;
    ct.d_o = tensor({c.B, c.T, c.H, c.V}, c.d_o);
    const auto forward = [&](const auto &x) { return softmax_attn::recurrent(x, opts, c.enc); };
    const Grads<S> analytic = softmax_attn::chunk_backward(in, ct, opts, c.enc);
    const Grads<S> exact = dual_grads(in, ct, forward);
    const FiniteDifference<S> fd = finite_difference_grads(in, ct, forward);
    // The terms of each gradient, bounded: dv_j = sum_i P_ij du_i gives T |dO|; with
    // |dP_ij| and |du_i . u_i| at most V |dO| A (A = max |v'|), |ds_ij| <= 2 V |dO| A P_ij,
    // so dq gives 2 V |dO| A Km, dk gives T 2 V |dO| A Qm, dg (sums of ds over i >= l > j)
    // gives T^2 2 V |dO| A. Their sum bounds every gradient's terms: T |dO| (1 + 2 V A
    // (Qm + Km + T)). The error is that times the relative error of the chain.
    using std::abs;
    const Bounds b = bounds_of(c);
    S dmax(0), A(0), Qm(0), Km(0);
    const S scale = scale_of<S>(opts, c.K);
    const auto grow = [](S &m, const S &x) { m = abs(x) > m ? S(abs(x)) : m; };
    for (std::size_t i = 0; i < ct.d_o.size(); ++i)
      grow(dmax, ct.d_o[i]);
    for (std::size_t i = 0; i < in.v.size(); ++i)
      grow(A, in.v[i]); // rotations keep each pair's norm: |v'| <= sqrt(2) max |v|
    for (std::size_t i = 0; i < in.q.size(); ++i)
      grow(Qm, S(scale * in.q[i])), grow(Km, in.k[i]);
    A *= sqrt(S(2)), Qm *= sqrt(S(2)), Km *= sqrt(S(2));
    const S T = S(static_cast<int>(c.T)), V = S(static_cast<int>(c.V));
    const S terms = T * dmax * (S(1) + S(2) * V * A * (Qm + Km + T));
    const S relative = S(2) * (S(2) * b.delta + gamma_n<S>(2 * (2.0 * c.T + c.V + 8)));
    const S allowed = relative * terms;
    // A loss evaluation rounds with error up to (2 delta + gamma_n) sum |dO| M; the central
    // difference divides two of them by 2h (h as finite_difference_grads picks it).
    S loss_magnitude(0);
    for (std::size_t i = 0; i < ct.d_o.size(); ++i)
      loss_magnitude += abs(ct.d_o[i]) * b.magnitude[i];
    const S loss_rounding = (S(2) * b.delta + b.gamma) * loss_magnitude;
    for (const auto &f : grad_fields<S>()) {
      if ((analytic.*f.grad).empty())
        continue;
      RC_LOG() << f.name << "\n";
      expect_holds("analytic vs dual",
                   compare(analytic.*f.grad, exact.*f.grad, [&](std::size_t) { return allowed; }));
      const Tensor<S> &err = fd.error.*f.grad, &x = in.*f.input;
      const auto fd_bound = [&](std::size_t i) {
        const S h = cbrt(scalar_traits<S>::epsilon()) * (abs(x[i]) > S(1) ? S(abs(x[i])) : S(1));
        return S(err[i] + loss_rounding / h + allowed);
      };
      expect_holds("finite differences vs dual",
                   compare(fd.grads.*f.grad, exact.*f.grad, fd_bound));
    }
  });
}
