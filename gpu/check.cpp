// ruleproof: the GPU checks (check.hpp): draw a case, run the kernels, the twin and the
// float128 truth on the same stored inputs, and judge every output.
#include "check.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "chunk_delta.hpp"
#include "chunk_dplr.hpp"
#include "chunk_gated_oja.hpp"
#include "chunk_gla.hpp"
#include "reference/core/seeds.hpp"
#include "twin_float128.hpp"

namespace ruleproof::gpu::check {

namespace {

/// splitmix64: the value stream of a case.
struct Stream {
  std::uint64_t state;
  std::uint64_t next() {
    const std::uint64_t x = mix(state);
    state += 0x9e3779b97f4a7c15ULL;
    return x;
  }
  /// uniform in [0, 1), 53 bits
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double symmetric() { return 2 * unit() - 1; }
};

Tensor<float> filled(Shape shape, Stream &s, double (*draw)(Stream &)) {
  Tensor<float> t(std::move(shape));
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<float>(draw(s));
  return t;
}

double symmetric(Stream &s) { return s.symmetric(); }

/// Every row of n entries of x scaled to unit Euclidean norm.
void unit_rows(Tensor<float> &x, std::size_t n) {
  for (std::size_t row = 0; row * n < x.size(); ++row) {
    float *r = x.data() + row * n;
    double norm = 0;
    for (std::size_t i = 0; i < n; ++i)
      norm += double(r[i]) * r[i];
    for (std::size_t i = 0; i < n; ++i)
      r[i] = static_cast<float>(r[i] / std::sqrt(norm));
  }
}

/// The kernels' forward on a drawn case, every output poisoned first: its stages from a call that
/// returns them, its output and final state from a call that does not (the call users make, which
/// may take other kernels: gated_delta_rule's fused forward keeps no stages).
StagedForward<float> kernel_forward(const Case &c, const Drawn &d) {
  const DeviceArray q = DeviceArray::upload(c.storage, d.in.q),
                    k = DeviceArray::upload(c.storage, d.in.k),
                    v = DeviceArray::upload(c.storage, d.in.v),
                    g = DeviceArray::upload(DType::fp32, d.in.g);
  const DeviceArray h0 = c.has_h0 ? DeviceArray::upload(DType::fp32, d.in.h0) : DeviceArray();
  const DeviceArray *h0_arg = c.has_h0 ? &h0 : nullptr;
  ChunkOptions o;
  o.path = c.path;
  o.scale = d.opts.scale;
  o.cu_seqlens = d.opts.cu_seqlens;
  o.output_final_state = c.output_final_state;
  o.poison_outputs = true;
  ChunkOptions plain = o;
  o.return_stages = true;
  StagedForward<float> r;
  // the output and final state of the call without stages
  const auto take = [&](const auto &forward) {
    const auto f = forward(plain);
    r.out.o = f.o.to_tensor();
    if (c.output_final_state)
      r.out.final_state = f.final_state.to_tensor();
  };
  if (c.rule == KernelRule::dplr_fla) {
    const DeviceArray a = DeviceArray::upload(c.storage, d.in.a),
                      b = DeviceArray::upload(c.storage, d.in.b);
    const auto forward = [&](const ChunkOptions &x) {
      return chunk_dplr_fwd({&q, &k, &v, &a, &b, &g, h0_arg}, x);
    };
    const DplrForward f = forward(o);
    take(forward);
    for (const auto &[name, x] : {std::pair{"g_cum", &f.g_cum},
                                  {"A_qk", &f.A_qk},
                                  {"A_qa", &f.A_qa},
                                  {"A_ba", &f.A_ba},
                                  {"A_bk", &f.A_bk},
                                  {"E", &f.E},
                                  {"w", &f.w},
                                  {"c", &f.c},
                                  {"h", &f.h},
                                  {"v2", &f.v2}})
      r.stages.push_back({name, x->to_tensor()});
  } else if (c.rule == KernelRule::gated_oja) {
    const DeviceArray beta = DeviceArray::upload(DType::fp32, d.in.beta);
    const auto forward = [&](const ChunkOptions &x) {
      return chunk_gated_oja_fwd({&q, &k, &v, &g, &beta, h0_arg}, x);
    };
    const GatedOjaForward f = forward(o);
    take(forward);
    for (const auto &[name, x] : {std::pair{"g_cum", &f.g_cum},
                                  {"A0", &f.A0},
                                  {"A", &f.A},
                                  {"w", &f.w},
                                  {"u", &f.u},
                                  {"h", &f.h},
                                  {"k_new", &f.k_new}})
      r.stages.push_back({name, x->to_tensor()});
  } else if (is_delta(c.rule)) {
    const DeviceArray beta = DeviceArray::upload(DType::fp32, d.in.beta);
    const auto forward = [&](const ChunkOptions &x) {
      return chunk_delta_fwd(gate_of(c.rule), {&q, &k, &v, &g, &beta, h0_arg}, x);
    };
    const DeltaForward f = forward(o);
    take(forward);
    for (const auto &[name, x] : {std::pair{"g_cum", &f.g_cum},
                                  {"A0", &f.A0},
                                  {"A", &f.A},
                                  {"w", &f.w},
                                  {"u", &f.u},
                                  {"h", &f.h},
                                  {"v_new", &f.v_new}})
      r.stages.push_back({name, x->to_tensor()});
  } else {
    const auto forward = [&](const ChunkOptions &x) {
      return chunk_gla_fwd(gate_of(c.rule), {&q, &k, &v, &g, h0_arg}, x);
    };
    const GlaForward f = forward(o);
    take(forward);
    for (const auto &[name, x] : {std::pair{"g_cum", &f.g_cum}, {"h", &f.h}, {"A", &f.A}})
      r.stages.push_back({name, x->to_tensor()});
  }
  return r;
}

struct KernelGrads {
  Grads<float> grads;
  Tensor<float> dh;
};

/// What a backward starts from: nothing of the forward's, its saved A (keep_for_backward), or its
/// WY pass's factors too (keep_factors).
enum class Kept { nothing, a, factors };

/// The options of a forward that keeps for its backward what `kept` names.
ChunkOptions keeping(const ChunkOptions &o, Kept kept) {
  ChunkOptions keep = o;
  keep.return_stages = false;
  keep.keep_for_backward = kept != Kept::nothing;
  keep.keep_factors = kept == Kept::factors;
  return keep;
}

/// The kernels' gradients of case c on the draw d; with `kept` (the delta rules and gated_oja),
/// the backward takes the forward's DeltaSaved (a forward keeping it runs first).
KernelGrads kernel_backward(const Case &c, const Drawn &d, Kept kept = Kept::nothing) {
  const bool from_saved = kept != Kept::nothing;
  const DeviceArray q = DeviceArray::upload(c.storage, d.in.q),
                    k = DeviceArray::upload(c.storage, d.in.k),
                    v = DeviceArray::upload(c.storage, d.in.v),
                    g = DeviceArray::upload(DType::fp32, d.in.g);
  const DeviceArray h0 = c.has_h0 ? DeviceArray::upload(DType::fp32, d.in.h0) : DeviceArray();
  const DeviceArray *h0_arg = c.has_h0 ? &h0 : nullptr;
  const DeviceArray d_o = DeviceArray::upload(c.storage, d.ct.d_o);
  const DeviceArray d_ht = c.has_dht ? DeviceArray::upload(DType::fp32, d.ct.d_ht) : DeviceArray();
  const DeviceArray *d_ht_arg = c.has_dht ? &d_ht : nullptr;
  ChunkOptions o;
  o.path = c.path;
  o.scale = d.opts.scale;
  o.cu_seqlens = d.opts.cu_seqlens;
  o.return_stages = true;
  o.poison_outputs = true;
  KernelGrads r;
  const auto take = [&](const auto &grads, const DeviceArray &dg) {
    r.grads.dq = grads.dq.to_tensor();
    r.grads.dk = grads.dk.to_tensor();
    r.grads.dv = grads.dv.to_tensor();
    r.grads.dg = dg.to_tensor();
    if (c.has_h0)
      r.grads.dh0 = grads.dh0.to_tensor();
    r.dh = grads.dh.to_tensor();
  };
  if (c.rule == KernelRule::dplr_fla) {
    const DeviceArray a = DeviceArray::upload(c.storage, d.in.a),
                      b = DeviceArray::upload(c.storage, d.in.b);
    const DplrGrads grads = chunk_dplr_bwd({&q, &k, &v, &a, &b, &g, h0_arg}, d_o, d_ht_arg, o);
    take(grads, grads.dgk);
    r.grads.da = grads.da.to_tensor();
    r.grads.db = grads.db.to_tensor();
  } else if (c.rule == KernelRule::gated_oja) {
    const DeviceArray beta = DeviceArray::upload(DType::fp32, d.in.beta);
    const GatedOjaArgs args{&q, &k, &v, &g, &beta, h0_arg};
    GatedOjaForward f;
    if (from_saved)
      f = chunk_gated_oja_fwd(args, keeping(o, kept));
    const GatedOjaGrads grads =
        chunk_gated_oja_bwd(args, d_o, d_ht_arg, o, from_saved ? &f.saved : nullptr);
    take(grads, grads.dg);
    r.grads.dbeta = grads.dbeta.to_tensor();
  } else if (is_delta(c.rule)) {
    const DeviceArray beta = DeviceArray::upload(DType::fp32, d.in.beta);
    const DeltaArgs args{&q, &k, &v, &g, &beta, h0_arg};
    DeltaForward f;
    if (from_saved)
      f = chunk_delta_fwd(gate_of(c.rule), args, keeping(o, kept));
    const DeltaGrads grads =
        chunk_delta_bwd(gate_of(c.rule), args, d_o, d_ht_arg, o, from_saved ? &f.saved : nullptr);
    take(grads, grads.dg);
    r.grads.dbeta = grads.dbeta.to_tensor();
  } else {
    const GlaGrads grads =
        chunk_gla_bwd(gate_of(c.rule), {&q, &k, &v, &g, h0_arg}, d_o, d_ht_arg, o);
    take(grads, grads.dg);
  }
  return r;
}

/// The stage dh of the reference: for each chunk c of each sequence, the gradient of the
/// state after c, which is dh0 of the sequence's rows after c run alone (the loss's part that
/// depends on that state; dh0 does not depend on the initial state's value, zeros here).
template <Scalar S>
Tensor<S> reference_dh(KernelRule rule, const Inputs<S> &in, const Cotangents<S> &ct,
                       const Options &opts, std::size_t NC) {
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t V = in.v.dim(3), C = opts.chunk_size;
  Tensor<S> dh({NC, H, K, V});
  std::size_t chunk = 0;
  for (const Sequence &seq : sequences_of(B, T, opts))
    for (std::size_t s = seq.begin; s < seq.end; s += C, ++chunk) {
      const std::size_t rest_begin = std::min(s + C, seq.end), L = seq.end - rest_begin;
      const auto rows = [&](const Tensor<S> &x) {
        if (x.empty())
          return x;
        const std::size_t D = x.rank() == 4 ? x.dim(3) : 1;
        Tensor<S> r(x.rank() == 4 ? Shape{1, L, H, D} : Shape{1, L, H});
        for (std::size_t t = 0; t < L; ++t)
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t e = 0; e < D; ++e)
              r[(t * H + h) * D + e] = x[((seq.batch * T + rest_begin + t) * H + h) * D + e];
        return r;
      };
      Inputs<S> rest{rows(in.q), rows(in.k),    rows(in.v),
                     rows(in.g), rows(in.beta), Tensor<S>({1, H, K, V}),
                     rows(in.a), rows(in.b)};
      Cotangents<S> rest_ct{rows(ct.d_o), Tensor<S>()};
      if (!ct.d_ht.empty()) {
        rest_ct.d_ht = Tensor<S>({1, H, K, V});
        for (std::size_t i = 0; i < H * K * V; ++i)
          rest_ct.d_ht[i] = ct.d_ht[seq.index * H * K * V + i];
      }
      Options o = opts;
      o.cu_seqlens.clear();
      const Grads<S> g = chunk_backward(rule, rest, rest_ct, o);
      for (std::size_t i = 0; i < H * K * V; ++i)
        dh[chunk * H * K * V + i] = g.dh0[i];
    }
  return dh;
}

std::string hexfloat(double x) {
  std::ostringstream s;
  s << std::hexfloat << x;
  return s.str();
}

void add(Result &r, Verdict v) {
  if (!v.holds())
    r.failures.push_back(v.summary());
  r.verdicts.push_back(std::move(v));
}

/// First element of rows [rows_from, rows_to) where a and b differ bitwise (or either is
/// NaN: an element never written), as a line; empty when identical.
std::string bitwise_difference(const std::string &what, const Tensor<float> &a,
                               const Tensor<float> &b, std::size_t rows_from = 0,
                               std::size_t rows_to = std::numeric_limits<std::size_t>::max()) {
  if (a.shape() != b.shape())
    return what + ": shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::size_t row_len = a.size() / (a.dim(0) * a.dim(1)); // [B, T, ...]: t is axis 1
    const std::size_t t = (i / row_len) % a.dim(1);
    if (t < rows_from || t >= rows_to)
      continue;
    if (std::isnan(a[i]) ||
        std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]))
      return what + ": element " + std::to_string(i) + " (t = " + std::to_string(t) + ") " +
             hexfloat(a[i]) + " vs " + hexfloat(b[i]);
  }
  return {};
}

} // namespace

bool is_gate_gradient(const std::string &output) { return output == "dg" || output == "dgk"; }

bool dg_sums_inside_chunks(KernelRule rule) {
  return rule != KernelRule::gla && rule != KernelRule::simple_gla;
}

std::size_t summed_terms(const Case &c, const std::string &output) {
  if (is_gate_gradient(output))
    return dg_sums_inside_chunks(c.rule) ? std::min<std::size_t>(c.T, kernel_chunk_size) : c.T;
  if (output == "dbeta") // A^T dU . v, A^T dW . k, dA0 . X: V, K and the chunk's rows
    return c.K + c.V + std::min<std::size_t>(c.T, kernel_chunk_size);
  if (is_score_stage(c.rule, output)) // gated_oja's A0 = Diag(beta) (v v^T decayed): over V
    return c.rule == KernelRule::gated_oja ? c.V : c.K;
  return 1;
}

bool is_score_stage(KernelRule rule, const std::string &stage_name) {
  if (rule == KernelRule::dplr_fla)
    return stage_name == "A_qk" || stage_name == "A_qa" || stage_name == "A_ba" ||
           stage_name == "A_bk";
  return stage_name == (is_delta(rule) || rule == KernelRule::gated_oja ? "A0" : "A");
}

Tensor<double> score_sums_of_squares(const Case &c, const Drawn &d, const std::string &stage_name) {
  const auto squared = [](const Tensor<float> &t) {
    return t.map<double>([](float x) { return double(x) * double(x); });
  };
  Inputs<double> in{squared(d.in.q),    squared(d.in.k),
                    squared(d.in.v),    d.in.g.map<double>([](float x) { return 2.0 * x; }),
                    squared(d.in.beta), squared(d.in.h0),
                    squared(d.in.a),    squared(d.in.b)};
  Options opts = d.opts;
  opts.scale = *d.opts.scale * *d.opts.scale;
  // |.|: dplr_fla's A_ba and A_bk read -a as one factor (its parameterisation, dplr::as_core),
  // so the stage of the squared inputs is -sum_c t_ic^2 there
  return stage(chunk_forward_staged(c.rule, in, opts), stage_name).map<double>([](double x) {
    return std::abs(x);
  });
}

double operand_floor(const Case &c, const Drawn &d, Policy policy, const std::string &stage_name) {
  const double u = operand_roundoff(policy, c.storage);
  if (u == 0 || !is_score_stage(c.rule, stage_name))
    return 0;
  const Tensor<double> sums = score_sums_of_squares(c, d, stage_name);
  double largest = 0;
  for (std::size_t i = 0; i < sums.size(); ++i)
    largest = std::max(largest, sums[i]);
  return u * std::sqrt(largest);
}

namespace {

Tensor<double> as_double(const Tensor<float> &t) {
  return t.map<double>([](float x) { return double(x); });
}

/// |x_i dx_i| at row bt (batch row times T plus t) and head h of [B, T, H, D] tensors x and dx,
/// reduced to the gate's columns: per key or value for a gate of that kind (`per_column`),
/// summed over D for a scalar gate; added into `sum`.
template <class X, class DX>
void add_row_products(const Tensor<X> &x, const Tensor<DX> &dx, std::size_t bt, std::size_t h,
                      bool per_column, std::vector<double> &sum) {
  if (x.empty() || dx.empty())
    return;
  const std::size_t H = x.dim(2), D = x.dim(3);
  for (std::size_t e = 0; e < D; ++e) {
    const std::size_t i = (bt * H + h) * D + e;
    sum[per_column ? e : 0] += std::abs(double(x[i]) * double(dx[i]));
  }
}

/// |s_ij ds_ij| of sequence n's [K, V] state s and its gradient ds at head h, reduced to the
/// gate's columns (keys: over j; values: over i; scalar: over both); added into `sum`.
template <class S, class DS>
void add_state_products(const Tensor<S> &s, const Tensor<DS> &ds, std::size_t n, std::size_t h,
                        GateKind gate, std::vector<double> &sum) {
  if (s.empty() || ds.empty())
    return;
  const std::size_t H = s.dim(1), K = s.dim(2), V = s.dim(3);
  for (std::size_t i = 0; i < K; ++i)
    for (std::size_t j = 0; j < V; ++j) {
      const std::size_t at = ((n * H + h) * K + i) * V + j;
      const std::size_t col = gate == GateKind::key ? i : gate == GateKind::value ? j : 0;
      sum[col] += std::abs(double(s[at]) * double(ds[at]));
    }
}

} // namespace

double gate_gradient_terms(KernelRule rule, const Inputs<float> &in, const Cotangents<float> &ct,
                           const Grads<double> &truth, const Options &opts) {
  const GateKind gate = gate_of(rule);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2);
  const std::size_t columns = gate == GateKind::key     ? in.q.dim(3)
                              : gate == GateKind::value ? in.v.dim(3)
                                                        : 1;
  Output<double> out; // o and the final state, where a term reads them: the reference in double
  if (gate == GateKind::value || !ct.d_ht.empty()) {
    Options o = opts;
    o.output_final_state = true;
    const Inputs<double> wide{as_double(in.q), as_double(in.k),    as_double(in.v),
                              as_double(in.g), as_double(in.beta), as_double(in.h0),
                              as_double(in.a), as_double(in.b)};
    out = chunk_forward_staged(rule, wide, o).out;
  }
  const bool key = gate == GateKind::key;
  const bool chunk_local = dg_sums_inside_chunks(rule);
  double largest = 0;
  for (const Sequence &seq : sequences_of(B, T, opts))
    for (std::size_t h = 0; h < H; ++h) {
      // dg's scopes: the sequence's chunks (chunk_local_cumsum_reverse), or the whole sequence
      const std::size_t step = chunk_local ? opts.chunk_size : seq.length();
      for (std::size_t begin = seq.begin; begin < seq.end; begin += step) {
        const std::size_t end = std::min(begin + step, seq.end);
        std::vector<double> sum(columns, 0.0); // the suffix from `begin`, the largest of the scope
        if (begin == seq.begin)
          add_state_products(in.h0, truth.dh0, seq.index, h, gate, sum);
        if (end == seq.end)
          add_state_products(out.final_state, ct.d_ht, seq.index, h, gate, sum);
        for (std::size_t t = begin; t < end; ++t) {
          const std::size_t bt = seq.batch * T + t;
          if (gate == GateKind::value) {
            add_row_products(out.o, ct.d_o, bt, h, true, sum);
            add_row_products(in.v, truth.dv, bt, h, true, sum);
          } else {
            add_row_products(in.q, truth.dq, bt, h, key, sum);
            add_row_products(in.k, truth.dk, bt, h, key, sum);
            add_row_products(in.a, truth.da, bt, h, key, sum);
            add_row_products(in.b, truth.db, bt, h, key, sum);
          }
        }
        for (double x : sum)
          largest = std::max(largest, x);
      }
    }
  return largest;
}

std::string Case::describe() const {
  std::ostringstream s;
  s << name_of(rule) << " " << dtype_name(storage) << " B=" << B << " T=" << T << " H=" << H
    << " K=" << K << " V=" << V;
  if (!cu_seqlens.empty()) {
    s << " cu_seqlens=[";
    for (std::size_t i = 0; i < cu_seqlens.size(); ++i)
      s << (i ? "," : "") << cu_seqlens[i];
    s << "]";
  }
  s << " h0=" << has_h0 << " final_state=" << output_final_state << " dht=" << has_dht
    << " gate_scale=" << gate_scale;
  if (key_scale != 1)
    s << " key_scale=" << key_scale;
  s << " seed=" << seed << " split=" << split;
  if (path != KernelPath::cuda_cores)
    s << " kernels=" << path_name(path);
  return s.str();
}

Drawn draw(const Case &c) {
  Stream s{c.seed};
  const std::size_t N = c.sequences();
  Drawn d;
  d.in.q = filled({c.B, c.T, c.H, c.K}, s, symmetric);
  d.in.k = filled({c.B, c.T, c.H, c.K}, s, symmetric);
  if (is_delta(c.rule))
    unit_rows(d.in.k, c.K);
  else
    for (std::size_t i = 0; i < d.in.k.size(); ++i)
      d.in.k[i] = static_cast<float>(c.key_scale * d.in.k[i]);
  d.in.v = filled({c.B, c.T, c.H, c.V}, s, symmetric);
  if (c.rule == KernelRule::gated_oja)
    unit_rows(d.in.v, c.V);
  const Shape g_shape = gate_of(c.rule) == GateKind::key     ? Shape{c.B, c.T, c.H, c.K}
                        : gate_of(c.rule) == GateKind::value ? Shape{c.B, c.T, c.H, c.V}
                                                             : Shape{c.B, c.T, c.H};
  d.in.g = Tensor<float>(g_shape);
  for (std::size_t i = 0; i < d.in.g.size(); ++i) // -gate_scale (1 - U), U in [0, 1)
    d.in.g[i] = static_cast<float>(-c.gate_scale * (1 - s.unit()));
  if (c.has_h0)
    d.in.h0 = filled({N, c.H, c.K, c.V}, s, symmetric);
  d.ct.d_o = filled({c.B, c.T, c.H, c.V}, s, symmetric);
  if (c.has_dht)
    d.ct.d_ht = filled({N, c.H, c.K, c.V}, s, symmetric);
  if (has_beta(c.rule)) { // drawn last: the other values are those of the same case of gla
    d.in.beta = Tensor<float>({c.B, c.T, c.H});
    for (std::size_t i = 0; i < d.in.beta.size(); ++i) // 1 - U, U in [0, 1)
      d.in.beta[i] = static_cast<float>(1 - s.unit());
  }
  if (has_ab(c.rule)) { // dplr's pair, rows of unit norm, drawn after everything else
    d.in.a = filled({c.B, c.T, c.H, c.K}, s, symmetric);
    d.in.b = filled({c.B, c.T, c.H, c.K}, s, symmetric);
    unit_rows(d.in.a, c.K);
    unit_rows(d.in.b, c.K);
  }
  d.in = as_stored(c.storage, std::move(d.in));
  d.ct = as_stored(c.storage, std::move(d.ct));
  d.opts.scale = 1.0 / std::sqrt(static_cast<double>(c.K));
  d.opts.chunk_size = kernel_chunk_size;
  d.opts.cu_seqlens = c.cu_seqlens;
  d.opts.output_final_state = c.output_final_state;
  return d;
}

double Verdict::ratio() const {
  if (!finite)
    return std::numeric_limits<double>::infinity();
  if (kernel_error == 0)
    return 0;
  return allowed > 0 ? kernel_error / allowed : std::numeric_limits<double>::infinity();
}

std::string Verdict::summary() const {
  std::ostringstream s;
  s << output << " (" << dtype_name(stored) << ", " << elements << " elements): ";
  if (!finite) {
    s << "NOT FINITE at element " << worst_index << " (kernel " << kernel_value << ", truth "
      << truth_value << ")";
    return s.str();
  }
  s << (holds() ? "holds" : "FAILS") << ", kernel error " << kernel_error << " vs twin "
    << twin_error << " (allowed " << allowed << " = " << twin_factor << " x max(twin, floor "
    << floor << "), ratio " << ratio() << "), max |truth| " << truth_max;
  if (term_size > 0)
    s << ", terms of size " << term_size;
  if (kernel_error > 0)
    s << "; worst element " << worst_index << ": kernel " << hexfloat(kernel_value) << ", twin "
      << hexfloat(twin_value) << ", truth " << truth_value;
  return s.str();
}

Verdict judge(const std::string &output, DType stored, const Tensor<float> &kernel,
              const Tensor<float> &twin, const Tensor<double> &truth, std::size_t summed_terms,
              double operand_floor, double term_size) {
  Verdict v;
  v.operand_floor = operand_floor;
  v.term_size = term_size;
  v.output = output;
  v.stored = stored;
  v.roundoff = unit_roundoff(stored);
  v.elements = truth.size();
  if (kernel.shape() != truth.shape() || twin.shape() != truth.shape()) {
    v.finite = false;
    return v;
  }
  for (std::size_t i = 0; i < truth.size(); ++i) {
    if (!std::isfinite(kernel[i]) || !std::isfinite(twin[i]) || !std::isfinite(truth[i])) {
      v.finite = false;
      v.worst_index = i;
      v.kernel_value = kernel[i];
      v.truth_value = truth[i];
      v.twin_value = twin[i];
      return v;
    }
    v.truth_max = std::max(v.truth_max, std::abs(truth[i]));
    v.twin_error = std::max(v.twin_error, std::abs(double(twin[i]) - truth[i]));
    const double e = std::abs(double(kernel[i]) - truth[i]);
    v.truth_rms += truth[i] * truth[i];
    v.kernel_rms += e * e;
    v.twin_rms += (double(twin[i]) - truth[i]) * (double(twin[i]) - truth[i]);
    if (e > v.kernel_error) {
      v.kernel_error = e;
      v.worst_index = i;
    }
  }
  if (truth.size() > 0) {
    const double n = static_cast<double>(truth.size());
    v.truth_rms = std::sqrt(v.truth_rms / n);
    v.kernel_rms = std::sqrt(v.kernel_rms / n);
    v.twin_rms = std::sqrt(v.twin_rms / n);
    v.kernel_value = kernel[v.worst_index];
    v.truth_value = truth[v.worst_index];
    v.twin_value = twin[v.worst_index];
  }
  // The sum's fp32 roundings, of the size of its terms where they cancel, then (for a 16-bit
  // output) its one rounding to the stored type.
  const double sum_roundoff = std::sqrt(double(summed_terms)) * unit_roundoff(DType::fp32);
  v.floor = sum_roundoff * std::max(v.truth_max, v.term_size) +
            (stored == DType::fp32 ? 0.0 : v.roundoff) * v.truth_max;
  v.floor += v.operand_floor; // the roundings of the products' factors, where they are rounded
  v.allowed = twin_factor * std::max(v.twin_error, v.floor);
  return v;
}

std::string Result::summary() const {
  std::ostringstream s;
  s << check << " on " << c.describe() << ": " << (holds() ? "holds" : "FAILS") << "\n";
  for (const Verdict &v : verdicts)
    s << "  " << v.summary() << "\n";
  if (verdicts.empty()) // the bitwise checks: what differs
    for (const std::string &f : failures)
      s << "  " << f << "\n";
  return s.str();
}

Result check_forward(const Case &c, unsigned threads) {
  Result r{"forward", c, {}, {}};
  Drawn d = draw(c);
  d.opts.threads = threads;
  const StagedForward<float> kernel = kernel_forward(c, d);
  const StagedForward<float> twin = twin_forward(c.rule, forward_policy(c), c.storage, d.in, d.opts,
                                                 OutputTypes::kernels_of(c.storage));
  const StagedForward<float128> truth = chunk_forward_staged(c.rule, widen(d.in), d.opts);
  add(r, judge("o", c.storage, kernel.out.o, twin.out.o, to_double_tensor(truth.out.o)));
  if (c.output_final_state)
    add(r, judge("final_state", DType::fp32, kernel.out.final_state, twin.out.final_state,
                 to_double_tensor(truth.out.final_state)));
  for (const char *name : stage_names(c.rule))
    add(r, judge(name, DType::fp32, stage(kernel, name), stage(twin, name),
                 to_double_tensor(stage(truth, name)), summed_terms(c, name),
                 operand_floor(c, d, forward_policy(c), name)));
  return r;
}

Result check_backward(const Case &c, unsigned threads) {
  Result r{"backward", c, {}, {}};
  Drawn d = draw(c);
  d.opts.threads = threads;
  const KernelGrads kernel = kernel_backward(c, d);
  const Grads<float> twin = twin_backward(c.rule, backward_policy(c), c.storage, d.in, d.ct, d.opts,
                                          OutputTypes::kernels_of(c.storage));
  const Inputs<float128> in128 = widen(d.in);
  const Cotangents<float128> ct128 = widen(d.ct);
  const Grads<float128> truth = chunk_backward(c.rule, in128, ct128, d.opts);
  const Grads<double> truth64 = to_double_grads(truth);
  add(r, judge("dq", c.storage, kernel.grads.dq, twin.dq, truth64.dq));
  add(r, judge("dk", c.storage, kernel.grads.dk, twin.dk, truth64.dk));
  add(r, judge("dv", c.storage, kernel.grads.dv, twin.dv, truth64.dv));
  add(r, judge("dg", DType::fp32, kernel.grads.dg, twin.dg, truth64.dg, summed_terms(c, "dg"), 0,
               gate_gradient_terms(c.rule, d.in, d.ct, truth64, d.opts)));
  if (has_beta(c.rule))
    add(r, judge("dbeta", DType::fp32, kernel.grads.dbeta, twin.dbeta, truth64.dbeta,
                 summed_terms(c, "dbeta")));
  if (has_ab(c.rule)) {
    add(r, judge("da", c.storage, kernel.grads.da, twin.da, truth64.da));
    add(r, judge("db", c.storage, kernel.grads.db, twin.db, truth64.db));
  }
  if (c.has_h0)
    add(r, judge("dh0", DType::fp32, kernel.grads.dh0, twin.dh0, truth64.dh0));
  const std::size_t NC = kernel.dh.empty() ? 0 : kernel.dh.dim(0);
  const Tensor<float> twin_dh = [&] { // under the backward's policy, as the twin's gradients
    const emulation::Scope scope(roundings_or_throw(backward_policy(c), c.storage));
    return reference_dh(c.rule, d.in, d.ct, d.opts, NC);
  }();
  add(r, judge("dh", DType::fp32, kernel.dh, twin_dh,
               to_double_tensor(reference_dh(c.rule, in128, ct128, d.opts, NC))));
  return r;
}

Result check_causality(const Case &c) {
  Result r{"causality", c, {}, {}};
  const Drawn d = draw(c);
  Case later = c;
  later.seed = c.seed ^ 0x5deece66dULL;
  const Drawn other = draw(later);
  Drawn changed = d; // rows t >= split of every input and of do from the other draw
  const auto replace_rows = [&](Tensor<float> &x, const Tensor<float> &y) {
    const std::size_t row = x.size() / std::max<std::size_t>(c.B * c.T, 1);
    for (std::size_t i = 0; i < x.size(); ++i)
      if ((i / row) % std::max<std::size_t>(c.T, 1) >= c.split)
        x[i] = y[i];
  };
  replace_rows(changed.in.q, other.in.q);
  replace_rows(changed.in.k, other.in.k);
  replace_rows(changed.in.v, other.in.v);
  replace_rows(changed.in.g, other.in.g);
  replace_rows(changed.in.beta, other.in.beta);
  replace_rows(changed.in.a, other.in.a);
  replace_rows(changed.in.b, other.in.b);
  replace_rows(changed.ct.d_o, other.ct.d_o);
  const StagedForward<float> a = kernel_forward(c, d), b = kernel_forward(c, changed);
  const KernelGrads ga = kernel_backward(c, d), gb = kernel_backward(c, changed);
  for (const std::string &diff : {bitwise_difference("o", a.out.o, b.out.o, 0, c.split),
                                  bitwise_difference("dq", ga.grads.dq, gb.grads.dq, 0, c.split)})
    if (!diff.empty())
      r.failures.push_back(diff + " (rows before t = " + std::to_string(c.split) + ")");
  return r;
}

Result check_saved_backward(const Case &c) {
  Result r{"saved_backward", c, {}, {}};
  if (!(is_delta(c.rule) || c.rule == KernelRule::gated_oja) || c.path != KernelPath::tensor_cores)
    return r;
  const Drawn d = draw(c);
  const KernelGrads solved = kernel_backward(c, d);
  for (const Kept kept : {Kept::a, Kept::factors}) {
    const KernelGrads saved = kernel_backward(c, d, kept);
    for (const std::string &diff :
         {bitwise_difference("dq", saved.grads.dq, solved.grads.dq),
          bitwise_difference("dk", saved.grads.dk, solved.grads.dk),
          bitwise_difference("dv", saved.grads.dv, solved.grads.dv),
          bitwise_difference("dg", saved.grads.dg, solved.grads.dg),
          bitwise_difference("dbeta", saved.grads.dbeta, solved.grads.dbeta),
          bitwise_difference("dh0", saved.grads.dh0, solved.grads.dh0),
          bitwise_difference("dh", saved.dh, solved.dh)})
      if (!diff.empty())
        r.failures.push_back(diff +
                             (kept == Kept::a ? " (from the saved A" : " (from the saved factors") +
                             " vs solved again)");
  }
  return r;
}

Result check_varlen(const Case &c) {
  Result r{"varlen", c, {}, {}};
  const Drawn d = draw(c);
  const StagedForward<float> whole = kernel_forward(c, d);
  const KernelGrads whole_g = kernel_backward(c, d);
  const std::size_t H = c.H, K = c.K, V = c.V, S = H * K * V;
  for (std::size_t n = 0; n + 1 < c.cu_seqlens.size(); ++n) {
    const std::size_t bos = static_cast<std::size_t>(c.cu_seqlens[n]);
    const std::size_t L = static_cast<std::size_t>(c.cu_seqlens[n + 1]) - bos;
    Case one = c;
    one.B = 1;
    one.T = L;
    one.cu_seqlens.clear();
    Drawn part = d;
    const auto rows = [&](const Tensor<float> &x) {
      if (x.empty())
        return x;
      Shape shape = x.shape();
      shape[1] = L;
      Tensor<float> y(shape);
      const std::size_t row = x.size() / std::max<std::size_t>(c.T, 1);
      std::copy(x.data() + bos * row, x.data() + (bos + L) * row, y.data());
      return y;
    };
    const auto state = [&](const Tensor<float> &x) {
      if (x.empty())
        return x;
      Tensor<float> y({1, H, K, V});
      std::copy(x.data() + n * S, x.data() + (n + 1) * S, y.data());
      return y;
    };
    part.in = {rows(d.in.q),    rows(d.in.k),   rows(d.in.v), rows(d.in.g),
               rows(d.in.beta), state(d.in.h0), rows(d.in.a), rows(d.in.b)};
    part.ct = {rows(d.ct.d_o), state(d.ct.d_ht)};
    part.opts.cu_seqlens.clear();
    const StagedForward<float> alone = kernel_forward(one, part);
    const KernelGrads alone_g = kernel_backward(one, part);
    const std::string seq = " of sequence " + std::to_string(n);
    for (std::string diff :
         {bitwise_difference("o" + seq, rows(whole.out.o), alone.out.o),
          c.output_final_state
              ? bitwise_difference("final_state" + seq, state(whole.out.final_state),
                                   alone.out.final_state)
              : std::string(),
          bitwise_difference("dq" + seq, rows(whole_g.grads.dq), alone_g.grads.dq),
          bitwise_difference("dk" + seq, rows(whole_g.grads.dk), alone_g.grads.dk),
          bitwise_difference("dv" + seq, rows(whole_g.grads.dv), alone_g.grads.dv),
          bitwise_difference("dg" + seq, rows(whole_g.grads.dg), alone_g.grads.dg),
          has_beta(c.rule)
              ? bitwise_difference("dbeta" + seq, rows(whole_g.grads.dbeta), alone_g.grads.dbeta)
              : std::string(),
          has_ab(c.rule) ? bitwise_difference("da" + seq, rows(whole_g.grads.da), alone_g.grads.da)
                         : std::string(),
          has_ab(c.rule) ? bitwise_difference("db" + seq, rows(whole_g.grads.db), alone_g.grads.db)
                         : std::string(),
          c.has_h0 ? bitwise_difference("dh0" + seq, state(whole_g.grads.dh0), alone_g.grads.dh0)
                   : std::string()})
      if (!diff.empty())
        r.failures.push_back(diff);
  }
  return r;
}

std::string name_of(Kind k) {
  switch (k) {
  case Kind::forward: return "forward";
  case Kind::backward: return "backward";
  case Kind::causality: return "causality";
  case Kind::varlen: return "varlen";
  }
  return "?";
}

Result run(Kind k, const Case &c, unsigned threads) {
  switch (k) {
  case Kind::forward: return check_forward(c, threads);
  case Kind::backward: return check_backward(c, threads);
  case Kind::causality: return check_causality(c);
  case Kind::varlen: return check_varlen(c);
  }
  return {};
}

std::vector<FixedCheck> fixed_checks(KernelRule rule, DType t, std::size_t K, std::size_t V) {
  Case c;
  c.rule = rule;
  c.storage = t;
  c.K = K;
  c.V = V;
  c.B = c.H = 2;
  c.T = 129;
  c.has_h0 = c.has_dht = true;
  c.seed = K * 1000 + V;
  c.split = 100;
  Case batch = c;
  batch.B = 1;
  batch.cu_seqlens = {0, 0, 64, 64, 129, 129};
  std::vector<FixedCheck> checks;
  for (Kind k : {Kind::forward, Kind::backward, Kind::causality})
    checks.push_back({k, c, name_of(k)});
  for (Kind k : {Kind::forward, Kind::backward, Kind::varlen})
    checks.push_back({k, batch, "batch_" + name_of(k)});
  if (rule == KernelRule::gla || rule == KernelRule::dplr_fla) {
    // keys 32 times as large under strong gates: in fp16, past the magnitude that a spread of 8
    // keeps factored decays below 65504 for (gpu/detail/gla_tc.cuh, spread_limit_for)
    Case large = c;
    large.key_scale = 32;
    large.gate_scale = 2;
    for (Kind k : {Kind::forward, Kind::backward})
      checks.push_back({k, large, "large_keys_" + name_of(k)});
  }
  return checks;
}

} // namespace ruleproof::gpu::check
