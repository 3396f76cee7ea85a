// ruleproof: flash-linear-attention's dumps and the faults planted in them (fla_corpus.hpp),
// compiled once for the tests and the sensitivity report.
#include "fla_corpus.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gpu/twin.hpp"
#include "reference/core/calls.hpp"

namespace ruleproof::cli::corpus {

/// Every dump of a folder, in name order.
std::vector<Entry> read_folder(const std::filesystem::path &folder) {
  std::vector<std::filesystem::path> files;
  for (const auto &f : std::filesystem::directory_iterator(folder))
    if (f.path().extension() == ".safetensors")
      files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::vector<Entry> entries;
  for (const auto &f : files) {
    const std::string name = f.stem().string();
    const gpu::KernelRule rule = rule_of_name(name);
    entries.push_back({name, rule, read_kernel_dump<float>(f, gate_tensor(rule))});
  }
  return entries;
}

namespace {

inline gpu::DType storage_type(io::DType t) {
  return t == io::DType::bf16  ? gpu::DType::bf16
         : t == io::DType::f16 ? gpu::DType::fp16
                               : gpu::DType::fp32;
}

/// The inputs of rows [begin, end) of batch row `batch`, every head, from state h0.
inline Inputs<double> slice(const Inputs<float> &in, std::size_t batch, std::size_t begin,
                            std::size_t end, Tensor<double> h0) {
  return part_of<double>(in, CallPart{batch, begin, end, 0, in.q.dim(2)}, std::move(h0));
}

/// The truth of a forward pass in double, with the options of the dump (its scale, its chunk
/// size), one sequence.
gpu::StagedForward<double> truth(gpu::KernelRule rule, const Inputs<double> &in,
                                 const Options &dump_opts) {
  Options opts;
  opts.scale = dump_opts.scale;
  opts.chunk_size = dump_opts.chunk_size;
  opts.output_final_state = true;
  return gpu::chunk_forward_staged(rule, in, opts);
}

/// out[i] += delta[i], rounded to type t.
inline void add_rounded(Tensor<float> &out, gpu::DType t, std::size_t at, double delta) {
  out[at] = gpu::round_to(t, static_cast<float>(double(out[at]) + delta));
}

} // namespace

gpu::DType type_of(const KernelDump<float> &d, const std::string &name) {
  const auto it = d.types.find(name);
  return it == d.types.end() ? gpu::DType::fp32 : storage_type(it->second);
}

std::vector<Planted> planted_faults(gpu::KernelRule rule, const KernelDump<float> &good) {
  std::vector<Planted> out;
  const KernelDump<float> &d = good;
  const std::size_t B = d.in.q.dim(0), T = d.in.q.dim(1), H = d.in.q.dim(2), K = d.in.q.dim(3);
  const std::size_t V = d.in.v.dim(3), C = d.opts.chunk_size;
  const std::vector<Sequence> seqs = sequences_of(B, T, d.opts);
  const gpu::DType t_in = storage_type(d.storage);
  const auto sequence_h0 = [&](const Sequence &s) {
    return state_part_of<double>(d.in.h0, s.index, CallPart{s.batch, s.begin, s.end, 0, H}, K, V);
  };

  // 1. each gradient scaled by 1 + 16 u
  const double eps = 16 * gpu::unit_roundoff(t_in);
  const std::pair<std::string, Tensor<float> Grads<float>::*> gradients[] = {
      {"dq", &Grads<float>::dq},       {"dk", &Grads<float>::dk},
      {"dv", &Grads<float>::dv},       {"d" + gate_tensor(rule), &Grads<float>::dg},
      {"dbeta", &Grads<float>::dbeta}, {"da", &Grads<float>::da},
      {"db", &Grads<float>::db},       {"dh0", &Grads<float>::dh0}};
  for (const auto &[name, member] : gradients) {
    if (!d.backward || (d.grads.*member).empty())
      continue;
    Planted p{name + " scaled by 1 + 16u", d};
    Tensor<float> &x = p.dump.grads.*member;
    const gpu::DType t = type_of(d, name);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = gpu::round_to(t, static_cast<float>(x[i] * (1 + eps)));
    out.push_back(std::move(p));
  }

  // The truth of each sequence alone, with its own h0 (o rows and stage h by chunk).
  std::vector<gpu::StagedForward<double>> whole;
  for (const Sequence &s : seqs)
    whole.push_back(s.length()
                        ? truth(rule, slice(d.in, s.batch, s.begin, s.end, sequence_h0(s)), d.opts)
                        : gpu::StagedForward<double>{});
  const gpu::DType t_o = type_of(d, "o"), t_state = type_of(d, "final_state");

  // 2. a state read from the previous chunk
  {
    Planted p{"state read from the previous chunk", d};
    bool applies = false;
    for (std::size_t n = 0; n < seqs.size(); ++n) {
      const Sequence &s = seqs[n];
      for (std::size_t c = 1; c * C < s.length(); ++c) {
        applies = true;
        const std::size_t b = s.begin + c * C, e = std::min(s.end, b + C);
        Tensor<double> h_before({1, H, K, V}); // the state at the start of chunk c - 1
        const Tensor<double> &h = gpu::stage(whole[n], "h");
        for (std::size_t i = 0; i < h_before.size(); ++i)
          h_before[i] = h[(c - 1) * h_before.size() + i];
        const Tensor<double> wrong =
            truth(rule, slice(d.in, s.batch, b, e, h_before), d.opts).out.o;
        const Tensor<double> &right = whole[n].out.o;
        for (std::size_t r = 0; r < e - b; ++r)
          for (std::size_t i = 0; i < H * V; ++i)
            add_rounded(p.dump.out.o, t_o, ((s.batch * T + b + r) * H * V) + i,
                        wrong[r * H * V + i] - right[(c * C + r) * H * V + i]);
      }
    }
    if (applies)
      out.push_back(std::move(p));
  }

  // 3. the last, partial chunk's rows of o shifted down by one step
  {
    Planted p{"last partial chunk's rows shifted by one step", d};
    bool applies = false;
    for (const Sequence &s : seqs) {
      const std::size_t partial = s.length() % C, first = s.end - partial;
      if (partial < 2)
        continue;
      applies = true;
      for (std::size_t r = s.end - 1; r > first; --r)
        for (std::size_t i = 0; i < H * V; ++i)
          p.dump.out.o[(s.batch * T + r) * H * V + i] = d.out.o[(s.batch * T + r - 1) * H * V + i];
    }
    if (applies)
      out.push_back(std::move(p));
  }

  // 4. h0 ignored
  if (!d.in.h0.empty()) {
    Planted p{"h0 ignored", d};
    for (std::size_t n = 0; n < seqs.size(); ++n) {
      const Sequence &s = seqs[n];
      Tensor<double> zero({1, H, K, V});
      const gpu::StagedForward<double> wrong =
          s.length() ? truth(rule, slice(d.in, s.batch, s.begin, s.end, zero), d.opts)
                     : gpu::StagedForward<double>{{Tensor<double>(), zero}, {}};
      const Tensor<double> right_state = s.length() ? whole[n].out.final_state : sequence_h0(s);
      for (std::size_t r = 0; r < s.length(); ++r)
        for (std::size_t i = 0; i < H * V; ++i)
          add_rounded(p.dump.out.o, t_o, (s.batch * T + s.begin + r) * H * V + i,
                      wrong.out.o[r * H * V + i] - whole[n].out.o[r * H * V + i]);
      if (!p.dump.out.final_state.empty())
        for (std::size_t i = 0; i < H * K * V; ++i)
          add_rounded(p.dump.out.final_state, t_state, n * H * K * V + i,
                      wrong.out.final_state[i] - right_state[i]);
    }
    out.push_back(std::move(p));
  }

  // 5. the final-state term of the gate's gradient dropped
  if (d.backward && !d.grads.dg.empty() && !d.ct.d_ht.empty() && !d.out.final_state.empty()) {
    Planted p{"final-state term of the gate's gradient dropped", d};
    const std::string dg = "d" + gate_tensor(rule);
    const gpu::DType t_dg = type_of(d, dg);
    const GateKind gate = gate_of(rule);
    const std::size_t G = gate == GateKind::key ? K : gate == GateKind::value ? V : 1;
    for (std::size_t n = 0; n < seqs.size(); ++n) {
      const Sequence &s = seqs[n];
      const Tensor<double> S_T = s.length() ? whole[n].out.final_state : sequence_h0(s);
      for (std::size_t h = 0; h < H; ++h) {
        std::vector<double> term(G, 0.0);
        for (std::size_t k = 0; k < K; ++k)
          for (std::size_t v = 0; v < V; ++v) {
            const std::size_t at = (h * K + k) * V + v;
            term[gate == GateKind::key     ? k
                 : gate == GateKind::value ? v
                                           : 0] += S_T[at] * d.ct.d_ht[n * H * K * V + at];
          }
        for (std::size_t r = s.begin; r < s.end; ++r)
          for (std::size_t c = 0; c < G; ++c)
            add_rounded(p.dump.grads.dg, t_dg, ((s.batch * T + r) * H + h) * G + c, -term[c]);
      }
    }
    out.push_back(std::move(p));
  }

  // 6. one step leaking across the causal mask: inside each chunk, o at row t reads the state
  // after t + 1, S_{t+1}^T q~_t, which is the output at t + 1 of the inputs with every row of q
  // moved down one step (the state does not depend on q)
  {
    Planted p{"one step leaking across the causal mask", d};
    bool applies = false;
    for (std::size_t n = 0; n < seqs.size(); ++n) {
      const Sequence &s = seqs[n];
      if (s.length() < 2)
        continue;
      Inputs<double> moved = slice(d.in, s.batch, s.begin, s.end, sequence_h0(s));
      const std::size_t row = H * K;
      for (std::size_t r = s.length(); r-- > 1;)
        std::copy_n(moved.q.data() + (r - 1) * row, row, moved.q.data() + r * row);
      const Tensor<double> leaked = truth(rule, moved, d.opts).out.o;
      for (std::size_t r = 0; r + 1 < s.length(); ++r) {
        if ((r + 1) % C == 0) // t + 1 starts the next chunk
          continue;
        applies = true;
        for (std::size_t i = 0; i < H * V; ++i)
          add_rounded(p.dump.out.o, t_o, (s.batch * T + s.begin + r) * H * V + i,
                      leaked[(r + 1) * H * V + i] - whole[n].out.o[r * H * V + i]);
      }
    }
    if (applies)
      out.push_back(std::move(p));
  }

  // 7. a NaN only in a padding row, and in the final state of an empty sequence
  for (const Sequence &s : seqs) {
    if (s.length() % C == 0)
      continue;
    Planted p{"NaN in the last row of the last, partial chunk", d};
    Tensor<float> &x = d.backward ? p.dump.grads.dq : p.dump.out.o;
    const std::size_t row = x.size() / (B * T);
    x[(s.batch * T + s.end - 1) * row + row - 1] = std::numeric_limits<float>::quiet_NaN();
    out.push_back(std::move(p));
    break;
  }
  for (const Sequence &s : seqs)
    if (s.length() == 0 && !d.out.final_state.empty()) {
      Planted p{"NaN in the final state of an empty sequence", d};
      p.dump.out.final_state[s.index * H * K * V] = std::numeric_limits<float>::quiet_NaN();
      out.push_back(std::move(p));
      break;
    }
  return out;
}

} // namespace ruleproof::cli::corpus
