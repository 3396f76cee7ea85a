// Properties of seed 002's multi-head GLA layer and GLA block (reference/gla/layer.hpp):
// the forms of the core (recurrent, parallel, chunkwise) give the same layer and block
// within a rounding bound computed from the precision and the input; one head with
// identity projections and no gate or norm is plain gla; dual-number gradients of a loss
// of the layer match central finite differences. Run in double and in float128.
//
// Reproduce a failure with RC_PARAMS="seed=N": every property logs its seed.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <random>

#include "reference/core/compare.hpp"
#include "reference/core/dual.hpp"
#include "reference/core/float128.hpp"
#include "reference/gla/layer.hpp"

using namespace ruleproof;
using namespace ruleproof::gla;

namespace {

/// The sizes of one drawn case.
struct Dims {
  std::size_t B, T, D, H, K, V, F, C;
  std::uint64_t seed;
};

/// Draws sizes: T not a multiple of C, T = 0 included; values come from `seed`.
rc::Gen<Dims> dims_gen(std::size_t max_T) {
  using rc::gen::inRange;
  using rc::gen::resize;
  return rc::gen::apply(
      [](std::size_t B, std::size_t T, std::size_t D, std::size_t H, std::size_t K, std::size_t V,
         std::size_t F, std::size_t C,
         std::uint64_t seed) { return Dims{B, T, D, H, K, V, F, C, seed}; },
      resize(100, inRange<std::size_t>(1, 3)), resize(100, inRange<std::size_t>(0, max_T + 1)),
      resize(100, inRange<std::size_t>(1, 6)), resize(100, inRange<std::size_t>(1, 4)),
      resize(100, inRange<std::size_t>(1, 5)), resize(100, inRange<std::size_t>(1, 5)),
      resize(100, inRange<std::size_t>(1, 6)), resize(100, inRange<std::size_t>(1, 8)),
      rc::gen::arbitrary<std::uint64_t>());
}

/// Values drawn in double and converted exactly, so every scalar sees the same case.
class Draw {
public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  template <class S> Mat<S> mat(Eigen::Index r, Eigen::Index c, double width) {
    Mat<S> m(r, c);
    for (Eigen::Index i = 0; i < r; ++i)
      for (Eigen::Index j = 0; j < c; ++j)
        m(i, j) = from_double<S>(uniform(-width, width));
    return m;
  }
  template <class S> Vec<S> vec(Eigen::Index n, double lo, double hi) {
    Vec<S> v(n);
    for (Eigen::Index i = 0; i < n; ++i)
      v(i) = from_double<S>(uniform(lo, hi));
    return v;
  }
  template <class S> Tensor<S> tensor(Shape shape, double width) {
    Tensor<S> x(std::move(shape));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = from_double<S>(uniform(-width, width));
    return x;
  }
  bool coin() { return uniform(0, 1) < 0.5; }

private:
  std::mt19937_64 rng_;
};

template <class S> struct LayerCase {
  Tensor<S> x, h0;
  LayerParams<S> p;
  LayerOptions opts;
};

/// A random layer: weights of width D^-1/2, gate biases in [1, 4] (decays near 1, as a
/// trained GLA starts), tau in [1, 16], each norm kind, output gate on or off.
template <class S> LayerCase<S> draw_layer(const Dims &d, Draw &draw) {
  LayerCase<S> c;
  const double w = 1.0 / std::sqrt(double(d.D));
  const Eigen::Index D = d.D, HK = d.H * d.K, HV = d.H * d.V;
  c.x = draw.tensor<S>({d.B, d.T, d.D}, 1.0);
  c.p.heads = d.H;
  c.p.W_q = draw.mat<S>(D, HK, w);
  c.p.W_k = draw.mat<S>(D, HK, w);
  c.p.W_v = draw.mat<S>(D, HV, w);
  c.p.W_g = draw.mat<S>(D, HK, w);
  c.p.b_g = draw.vec<S>(HK, 1.0, 4.0);
  c.p.W_r = draw.mat<S>(D, HV, w);
  c.p.b_r = draw.vec<S>(HV, -1.0, 1.0);
  c.p.W_o = draw.mat<S>(HV, D, 1.0 / std::sqrt(double(HV)));
  if (draw.coin()) {
    c.p.head_norm.weight = draw.vec<S>(d.V, 0.5, 1.5);
    c.p.head_norm.bias = draw.vec<S>(d.V, -0.5, 0.5);
  }
  const int kind = int(draw.uniform(0, 3));
  c.opts.head_norm = kind == 0   ? norm_kind::none
                     : kind == 1 ? norm_kind::layer_norm
                                 : norm_kind::rms_norm;
  c.opts.output_gate = draw.coin();
  c.opts.gate_normalizer = draw.uniform(1.0, 16.0);
  c.opts.core.chunk_size = d.C;
  if (draw.coin())
    c.h0 = draw.tensor<S>({d.B, d.H, d.K, d.V}, 1.0);
  return c;
}

template <class S> struct BlockCase {
  Tensor<S> x, h0;
  BlockParams<S> p;
  BlockOptions opts;
};

template <class S> BlockCase<S> draw_block(const Dims &d, Draw &draw) {
  LayerCase<S> l = draw_layer<S>(d, draw);
  BlockCase<S> c{l.x, l.h0, {}, {}};
  c.p.attn = l.p;
  c.opts.layer = l.opts;
  const Eigen::Index D = d.D, F = d.F;
  if (draw.coin()) {
    c.p.attn_norm = {draw.vec<S>(D, 0.5, 1.5), draw.vec<S>(D, -0.5, 0.5)};
    c.p.mlp_norm = {draw.vec<S>(D, 0.5, 1.5), draw.vec<S>(D, -0.5, 0.5)};
  }
  c.p.W_1 = draw.mat<S>(D, F, 1.0 / std::sqrt(double(D)));
  c.p.W_2 = draw.mat<S>(D, F, 1.0 / std::sqrt(double(D)));
  c.p.W_3 = draw.mat<S>(F, D, 1.0 / std::sqrt(double(F)));
  c.opts.block_norm = draw.coin() ? norm_kind::layer_norm : norm_kind::rms_norm;
  c.opts.residual = draw.coin() ? block_residual::seed_as_written : block_residual::y;
  return c;
}

// ---------------------------------------------------------------------------------------
// The rounding bound. Two forms compute the same function; each differs from the exact
// value (on the same, identically rounded inputs of the core) by at most a first-order
// error bound, so their difference is bounded by twice it. The bound is carried stage by
// stage: |f(a) - f(b)| <= |J_f| |a - b| + 2 (rounding of f), with |J_f| the absolute
// Jacobian of the stage at the computed values and Higham's gamma_n for the rounding.

/// The core's magnitude: the recurrent form on |q|, |k|, |v|, |h0| with the same gates,
/// i.e. sum over all terms of |q_i k_i v_j| times their decay, per output element.
template <class S> Tensor<S> core_magnitude(const Inputs<S> &in, const Options &opts) {
  using std::abs;
  Inputs<S> a = in;
  for (Tensor<S> *t : {&a.q, &a.k, &a.v, &a.h0})
    for (std::size_t i = 0; i < t->size(); ++i)
      (*t)[i] = abs((*t)[i]);
  return recurrent(a, opts).o;
}

/// The operation count of one core output: K products and sums, 3 roundings a step of
/// the state (decay, product, sum), the exp calls, and the log-space sums: a cumulative
/// log-decay of size G carries an absolute error gamma_T G that exp turns relative.
template <class S> double core_operation_count(const Inputs<S> &in) {
  const std::size_t T = in.q.dim(1), K = in.q.dim(3);
  double g_span = 0; // max over (b, h, key) of sum_t |g_t|
  for (std::size_t b = 0; b < in.g.dim(0); ++b)
    for (std::size_t h = 0; h < in.g.dim(2); ++h)
      for (std::size_t c = 0; c < K; ++c) {
        double s = 0;
        for (std::size_t t = 0; t < T; ++t)
          s -= to_double(in.g(b, t, h, c));
        g_span = std::max(g_span, s);
      }
  return double(K) + 3.0 * double(T) + 10.0 + 3.0 * double(T) * (1.0 + g_span);
}

/// |J| delta + 2 (own rounding) through one normalisation of a row z.
template <class S>
Vec<S> norm_bound(const Vec<S> &z, const Vec<S> &delta, norm_kind kind, const NormWeights<S> &wb,
                  const S &eps) {
  using std::abs;
  using std::sqrt;
  const Eigen::Index n = z.size();
  if (kind == norm_kind::none || n == 0)
    return delta;
  const S u = scalar_traits<S>::epsilon() / S(2);
  S mean(0);
  if (kind == norm_kind::layer_norm)
    mean = z.sum() / S(static_cast<int>(n));
  const Vec<S> x = (z.array() - mean).matrix();
  const S sd = sqrt(x.squaredNorm() / S(static_cast<int>(n)) + eps);
  const S zmax = z.cwiseAbs().maxCoeff();
  const S g = gamma_n<S>(3.0 * double(n) + 10.0);
  Vec<S> out(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const S w = wb.weight.size() > 0 ? S(abs(wb.weight(j))) : S(1);
    S acc(0);
    for (Eigen::Index k = 0; k < n;
         ++k) { // |J_jk| = |w_j| / sd |[j = k] - 1/n - x_j x_k / (n sd^2)|
      S jk = (j == k ? S(1) : S(0)) - x(j) * x(k) / (S(static_cast<int>(n)) * sd * sd);
      if (kind == norm_kind::layer_norm)
        jk -= S(1) / S(static_cast<int>(n));
      acc += abs(jk) * delta(k);
    }
    const S own = g * w / sd * (abs(z(j)) + S(2) * zmax + S(2) * abs(x(j)) * zmax / sd) +
                  u * (wb.bias.size() > 0 ? S(abs(wb.bias(j))) : S(0));
    out(j) = w / sd * acc + S(2) * own;
  }
  return out;
}

/// Applies norm_bound to every [.., n] row of a tensor.
template <class S>
Tensor<S> norm_bound_rows(const Tensor<S> &z, const Tensor<S> &delta, norm_kind kind,
                          const NormWeights<S> &wb, const S &eps) {
  const std::size_t n = z.dim(z.rank() - 1);
  Tensor<S> out(z.shape());
  Vec<S> zr(n), dr(n);
  for (std::size_t base = 0; base < z.size(); base += n) {
    for (std::size_t i = 0; i < n; ++i)
      zr(i) = z[base + i], dr(i) = delta[base + i];
    const Vec<S> o = norm_bound<S>(zr, dr, kind, wb, eps);
    for (std::size_t i = 0; i < n; ++i)
      out[base + i] = o(i);
  }
  return out;
}

/// |delta| |W| + 2 gamma_n |a| |W| for a row-vector product a W, a [B, T, n] (flattened).
template <class S>
Tensor<S> product_bound(const Tensor<S> &a, const Tensor<S> &delta, const Mat<S> &W) {
  const std::size_t rows = a.size() / W.rows(), n = W.rows(), m = W.cols();
  const S g = gamma_n<S>(double(n) + 2.0);
  Tensor<S> out({rows, m});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < m; ++j) {
      S acc(0);
      for (std::size_t i = 0; i < n; ++i) {
        using std::abs;
        acc += (delta[r * n + i] + S(2) * g * abs(a[r * n + i])) * abs(W(i, j));
      }
      out[r * m + j] = acc;
    }
  return out;
}

/// The bound on |y_form1 - y_form2| of the layer, from the stages of one run.
template <class S>
Tensor<S> layer_bound(const LayerStages<S> &st, const LayerParams<S> &p, const LayerOptions &opts) {
  using std::abs;
  const S u = scalar_traits<S>::epsilon() / S(2);
  const S eps = from_double<S>(opts.norm_eps);
  const Tensor<S> magnitude = core_magnitude(st.core_in, opts.core);
  const S g_core = gamma_n<S>(core_operation_count(st.core_in));
  Tensor<S> delta_o(magnitude.shape());
  for (std::size_t i = 0; i < delta_o.size(); ++i)
    delta_o[i] = S(2) * g_core * magnitude[i]; // each form within gamma M of the exact core
  const Tensor<S> delta_on =
      norm_bound_rows(st.core.o, delta_o, opts.head_norm, p.head_norm, eps); // LN(o^h)
  Tensor<S> gated(st.r.shape()), delta_gated(st.r.shape());                  // r . o'
  for (std::size_t i = 0; i < gated.size(); ++i) {
    gated[i] = st.r[i] * st.o_norm[i];
    delta_gated[i] = abs(st.r[i]) * delta_on[i] + S(2) * u * abs(gated[i]);
  }
  Tensor<S> dy = product_bound(gated, delta_gated, p.W_o); // (r . o') W_O
  Tensor<S> out(st.y.shape());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = dy[i];
  return out;
}

/// The bound on |X'_form1 - X'_form2| of the block.
template <class S>
Tensor<S> block_bound(const BlockStages<S> &st, const BlockParams<S> &p, const BlockOptions &opts) {
  using std::abs;
  using std::exp;
  const S u = scalar_traits<S>::epsilon() / S(2);
  const S eps = from_double<S>(opts.layer.norm_eps);
  const Tensor<S> dl = layer_bound(st.layer, p.attn, opts.layer);
  Tensor<S> dY(st.y.shape());
  for (std::size_t i = 0; i < dY.size(); ++i)
    dY[i] = dl[i] + S(2) * u * abs(st.y[i]); // Y = GLA(LN(X)) + X
  const Tensor<S> dYn = norm_bound_rows(st.y, dY, opts.block_norm, p.mlp_norm, eps);
  const std::size_t F = p.W_1.cols();
  const Tensor<S> dz1 = product_bound(st.y_norm, dYn, p.W_1),
                  dz2 = product_bound(st.y_norm, dYn, p.W_2);
  Tensor<S> prod(st.up.shape()), dprod(st.up.shape());
  const S g_swish = gamma_n<S>(6.0);
  for (std::size_t i = 0; i < prod.size(); ++i) {
    const std::size_t bt = i / F, f = i % F;
    S z1(0); // the pre-activation Z W_1, recomputed for Swish'
    for (Eigen::Index d = 0; d < p.W_1.rows(); ++d)
      z1 += st.y_norm[bt * p.W_1.rows() + d] * p.W_1(d, f);
    const S sig = S(1) / (S(1) + exp(-z1));
    const S swish_slope = sig * (S(1) + z1 * (S(1) - sig)); // Swish'(z) = s (1 + z (1 - s))
    const S d_swish = abs(swish_slope) * dz1[i] + S(2) * g_swish * abs(st.swish_gate[i]);
    prod[i] = st.swish_gate[i] * st.up[i];
    dprod[i] = abs(st.up[i]) * d_swish + abs(st.swish_gate[i]) * dz2[i] + S(2) * u * abs(prod[i]);
  }
  const Tensor<S> dF = product_bound(prod, dprod, p.W_3);
  Tensor<S> out(st.out.shape());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] =
        dF[i] + (opts.residual == block_residual::y ? dY[i] : S(0)) + S(2) * u * abs(st.out[i]);
  return out;
}

template <class S>
void check_within(const char *what, const Tensor<S> &a, const Tensor<S> &b,
                  const Tensor<S> &bound) {
  const Discrepancy d = compare(a, b, [&](std::size_t i) { return bound[i]; });
  RC_LOG() << what << ": max |diff| " << d.max_abs_error << ", worst diff / bound "
           << d.worst_over_bound << " at " << d.worst_index << " (" << d.value_a << " vs "
           << d.value_b << ")\n";
  RC_ASSERT(d.holds());
}

// ---------------------------------------------------------------------------------------

template <class S> void layer_forms_agree() {
  const Dims d = *dims_gen(12);
  RC_LOG() << "B=" << d.B << " T=" << d.T << " D=" << d.D << " H=" << d.H << " K=" << d.K
           << " V=" << d.V << " C=" << d.C << " seed=" << d.seed << "\n";
  Draw draw(d.seed);
  LayerCase<S> c = draw_layer<S>(d, draw);
  c.opts.form = core_form::recurrent;
  const LayerStages<S> rec = layer_stages(c.x, c.p, c.opts, c.h0);
  const Tensor<S> bound = layer_bound(rec, c.p, c.opts);
  for (core_form f : {core_form::parallel, core_form::chunk}) {
    c.opts.form = f;
    const LayerOutput<S> other = layer(c.x, c.p, c.opts, c.h0);
    check_within(("layer " + std::string(name_of(f)) + " vs recurrent").c_str(), other.y, rec.y,
                 bound);
  }
}

template <class S> void block_forms_agree() {
  const Dims d = *dims_gen(12);
  RC_LOG() << "B=" << d.B << " T=" << d.T << " D=" << d.D << " H=" << d.H << " K=" << d.K
           << " V=" << d.V << " F=" << d.F << " C=" << d.C << " seed=" << d.seed << "\n";
  Draw draw(d.seed);
  BlockCase<S> c = draw_block<S>(d, draw);
  c.opts.layer.form = core_form::recurrent;
  const BlockStages<S> rec = block_stages(c.x, c.p, c.opts, c.h0);
  const Tensor<S> bound = block_bound(rec, c.p, c.opts);
  for (core_form f : {core_form::parallel, core_form::chunk}) {
    c.opts.layer.form = f;
    const LayerOutput<S> other = block(c.x, c.p, c.opts, c.h0);
    check_within(("block " + std::string(name_of(f)) + " vs recurrent").c_str(), other.y, rec.out,
                 bound);
  }
}

/// H = 1, W_Q = W_K = W_V = W_O = I, no output gate, no head norm: y = gla(x, x, x, g).o
/// with g = log-sigmoid(x W_g + b_g) / tau, bit for bit, in every form.
template <class S> void layer_reduces_to_plain_gla() {
  const Dims d = *dims_gen(12);
  RC_LOG() << "B=" << d.B << " T=" << d.T << " D=" << d.D << " C=" << d.C << " seed=" << d.seed
           << "\n";
  Draw draw(d.seed);
  LayerCase<S> c = draw_layer<S>({d.B, d.T, d.D, 1, d.D, d.D, d.F, d.C, d.seed}, draw);
  const Mat<S> I = Mat<S>::Identity(d.D, d.D);
  c.p.W_q = c.p.W_k = c.p.W_v = c.p.W_o = I;
  c.opts.output_gate = false;
  c.opts.head_norm = norm_kind::none;
  Inputs<S> in; // the plain call, built by hand from x
  in.q = Tensor<S>({d.B, d.T, 1, d.D});
  in.g = Tensor<S>({d.B, d.T, 1, d.D});
  const S tau = from_double<S>(c.opts.gate_normalizer);
  for (std::size_t b = 0; b < d.B; ++b) {
    const Mat<S> xb = gla::batch_rows(c.x, b);
    const Mat<S> z = gla::add_bias(Mat<S>(xb * c.p.W_g), c.p.b_g);
    for (std::size_t t = 0; t < d.T; ++t)
      for (std::size_t i = 0; i < d.D; ++i) {
        in.q(b, t, 0, i) = c.x(b, t, i);
        in.g(b, t, 0, i) = log_sigmoid(z(t, i)) / tau;
      }
  }
  in.k = in.v = in.q;
  in.h0 = c.h0;
  for (core_form f : {core_form::recurrent, core_form::parallel, core_form::chunk}) {
    c.opts.form = f;
    const LayerOutput<S> y = layer(c.x, c.p, c.opts, c.h0);
    const Output<S> o = run_core(in, c.opts.core, f);
    Tensor<S> o3({d.B, d.T, d.D});
    for (std::size_t i = 0; i < o3.size(); ++i)
      o3[i] = o.o[i];
    RC_LOG() << name_of(f) << "\n";
    RC_ASSERT(identical(y.y, o3));
    RC_ASSERT(identical(y.final_state, o.final_state));
  }
}

/// The loss <dY, Y> of the layer: its dual-number derivative along every element of x
/// matches central differences, within the differences' own error: the Richardson
/// estimate |D(h) - D(2h)| / 3 of the truncation (doubled: it is itself first order) plus
/// the rounding of the loss, eps_L / h, with eps_L from the layer's rounding bound.
template <class S> void layer_gradient_matches_finite_differences() {
  using std::abs;
  using std::cbrt;
  using std::ldexp;
  const Dims d0 = *dims_gen(6);
  const Dims d{1,
               d0.T,
               std::min<std::size_t>(d0.D, 4),
               std::min<std::size_t>(d0.H, 2),
               std::min<std::size_t>(d0.K, 3),
               std::min<std::size_t>(d0.V, 3),
               d0.F,
               d0.C,
               d0.seed};
  Draw draw(d.seed);
  LayerCase<S> c = draw_layer<S>(d, draw);
  const int form = int(draw.uniform(0, 3));
  c.opts.form = form == 0   ? core_form::recurrent
                : form == 1 ? core_form::parallel
                            : core_form::chunk;
  RC_LOG() << "T=" << d.T << " D=" << d.D << " H=" << d.H << " K=" << d.K << " V=" << d.V
           << " C=" << d.C << " form=" << name_of(c.opts.form) << " seed=" << d.seed << "\n";
  const Tensor<S> dY = draw.tensor<S>({d.B, d.T, d.D}, 1.0);
  const auto loss_of = [&](const LayerOutput<S> &out) {
    S total(0);
    for (std::size_t i = 0; i < dY.size(); ++i)
      total += dY[i] * out.y[i];
    return total;
  };

  // eps_L: the rounding of one evaluation of the loss, from the layer's rounding bound
  // (which bounds two evaluations' difference, hence the half) and the final sum.
  const LayerStages<S> st = layer_stages(c.x, c.p, c.opts, c.h0);
  const Tensor<S> bound = layer_bound(st, c.p, c.opts);
  S eps_loss(0), loss_magnitude(0);
  for (std::size_t i = 0; i < dY.size(); ++i) {
    eps_loss += abs(dY[i]) * bound[i] / S(2);
    loss_magnitude += abs(dY[i] * st.y[i]);
  }
  eps_loss += gamma_n<S>(double(dY.size()) + 1) * loss_magnitude;

  // Dual numbers: the whole case converted once, seeded one element of x at a time.
  using Dd = Dual<S>;
  const auto to_dual_mat = [](const Mat<S> &m) { return Mat<Dd>(m.template cast<Dd>()); };
  const auto to_dual_vec = [](const Vec<S> &v) { return Vec<Dd>(v.template cast<Dd>()); };
  const auto to_dual = [](const Tensor<S> &t) {
    return t.template map<Dd>([](const S &e) { return Dd(e); });
  };
  LayerParams<Dd> pd{c.p.heads,
                     to_dual_mat(c.p.W_q),
                     to_dual_mat(c.p.W_k),
                     to_dual_mat(c.p.W_v),
                     to_dual_mat(c.p.W_g),
                     to_dual_vec(c.p.b_g),
                     to_dual_mat(c.p.W_r),
                     to_dual_vec(c.p.b_r),
                     to_dual_mat(c.p.W_o),
                     {to_dual_vec(c.p.head_norm.weight), to_dual_vec(c.p.head_norm.bias)}};
  Tensor<Dd> xd = to_dual(c.x);
  const Tensor<Dd> h0d = to_dual(c.h0), dYd = to_dual(dY);

  Tensor<S> x = c.x;
  const S step0 = cbrt(scalar_traits<S>::epsilon());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xd[i].b = S(1);
    const LayerOutput<Dd> yd = layer(xd, pd, c.opts, h0d);
    xd[i].b = S(0);
    S exact(0);
    for (std::size_t j = 0; j < dY.size(); ++j)
      exact += (dYd[j] * yd.y[j]).b;

    // h: a power of two near eps^(1/3) max(1, |x|), so x +- h and x +- 2h are exact here
    int e2 = 0;
    (void)std::frexp(to_double(S(step0 * (abs(x[i]) > S(1) ? abs(x[i]) : S(1)))), &e2);
    const S h = ldexp(S(1), e2);
    const S x0 = x[i];
    const auto central = [&](const S &step) {
      x[i] = x0 + step;
      const S up = loss_of(layer(x, c.p, c.opts, c.h0));
      x[i] = x0 - step;
      const S down = loss_of(layer(x, c.p, c.opts, c.h0));
      x[i] = x0;
      return S((up - down) / (step + step));
    };
    const S d1 = central(h), d2 = central(S(2) * h);
    const S allowed = S(2) * abs(d1 - d2) / S(3) + eps_loss / h +
                      gamma_n<S>(core_operation_count(st.core_in)) * abs(exact);
    RC_LOG() << "x[" << i << "]: dual " << to_double(exact) << ", central " << to_double(d1)
             << ", diff " << to_double(S(abs(exact - d1))) << ", allowed " << to_double(allowed)
             << "\n";
    RC_ASSERT(abs(exact - d1) <= allowed);
  }
}

} // namespace

TEST_CASE("layer_forms_agree_within_rounding") {
  rc::prop("double", [] { layer_forms_agree<double>(); });
  rc::prop("float128", [] { layer_forms_agree<float128>(); });
}

TEST_CASE("block_forms_agree_within_rounding") {
  rc::prop("double", [] { block_forms_agree<double>(); });
  rc::prop("float128", [] { block_forms_agree<float128>(); });
}

TEST_CASE("layer_with_one_head_identity_projections_is_plain_gla") {
  rc::prop("double", [] { layer_reduces_to_plain_gla<double>(); });
  rc::prop("float128", [] { layer_reduces_to_plain_gla<float128>(); });
}

TEST_CASE("layer_input_gradient_dual_matches_finite_differences") {
  rc::prop("double", [] { layer_gradient_matches_finite_differences<double>(); });
  rc::prop("float128", [] { layer_gradient_matches_finite_differences<float128>(); });
}
