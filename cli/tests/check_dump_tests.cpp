// ruleproof check-dump on dumps written here: another fp32 order of the algorithm (the
// reference at chunk size 16, like a correct kernel) holds for every kernel rule, a planted error
// in one output or gradient fails, and a dump missing a tensor, truncated or with a wrong shape is
// refused as bad input.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "check_dump.hpp"
#include "gpu/twin.hpp"
#include "reporting/atomic_write.hpp"

using namespace ruleproof;
using namespace ruleproof::cli;
using gpu::DType;
using gpu::KernelRule;

namespace {

io::DType io_type(DType t) {
  return t == DType::bf16 ? io::DType::bf16 : t == DType::fp16 ? io::DType::f16 : io::DType::f32;
}

void put(io::Safetensors &f, const std::string &name, DType t, const Tensor<float> &x) {
  if (x.empty())
    return;
  io::StoredTensor s{io_type(t), x.shape(), {}};
  for (std::size_t i = 0; i < x.size(); ++i)
    s.values.push_back(x[i]);
  f.tensors[name] = std::move(s);
}

/// A case of `rule` and what a correct kernel of another fp32 order returns on it.
struct Dumped {
  gpu::check::Case c;
  gpu::check::Drawn d;
  Output<float> out;
  Grads<float> grads;
};

Dumped correct_kernel(KernelRule rule, DType t) {
  Dumped r;
  r.c.rule = rule, r.c.storage = t, r.c.T = 70, r.c.H = 2, r.c.has_h0 = true, r.c.has_dht = true;
  r.c.seed = 11;
  r.d = gpu::check::draw(r.c);
  Options opts = r.d.opts;
  opts.chunk_size = 16; // another order of the same sums
  r.out = gpu::chunk_forward_staged(rule, r.d.in, opts).out;
  r.out.o = gpu::rounded(t, r.out.o);
  r.grads = gpu::chunk_backward(rule, r.d.in, r.d.ct, opts);
  for (Tensor<float> *x : {&r.grads.dq, &r.grads.dk, &r.grads.dv, &r.grads.da, &r.grads.db})
    *x = gpu::rounded(t, *x);
  return r;
}

io::Safetensors dump_of(const Dumped &r) {
  const DType t = r.c.storage;
  const std::string gate = gate_tensor(r.c.rule);
  io::Safetensors f;
  put(f, "q", t, r.d.in.q), put(f, "k", t, r.d.in.k), put(f, "v", t, r.d.in.v);
  put(f, gate, DType::fp32, r.d.in.g), put(f, "beta", DType::fp32, r.d.in.beta);
  put(f, "a", t, r.d.in.a), put(f, "b", t, r.d.in.b);
  put(f, "initial_state", DType::fp32, r.d.in.h0);
  put(f, "o", t, r.out.o), put(f, "final_state", DType::fp32, r.out.final_state);
  put(f, "do", t, r.d.ct.d_o), put(f, "dht", DType::fp32, r.d.ct.d_ht);
  put(f, "dq", t, r.grads.dq), put(f, "dk", t, r.grads.dk), put(f, "dv", t, r.grads.dv);
  put(f, "d" + gate, DType::fp32, r.grads.dg), put(f, "dbeta", DType::fp32, r.grads.dbeta);
  put(f, "da", t, r.grads.da), put(f, "db", t, r.grads.db);
  put(f, "dh0", DType::fp32, r.grads.dh0);
  f.metadata["scale"] = std::to_string(*r.d.opts.scale);
  return f;
}

/// Writes the dump, reads it back as check-dump does, and judges it.
std::vector<gpu::check::Verdict> judged(KernelRule rule, const io::Safetensors &f) {
  const auto path = std::filesystem::temp_directory_path() / "ruleproof_check_dump.safetensors";
  io::write_safetensors(path, f);
  const KernelDump<float> dump = read_kernel_dump<float>(path, gate_tensor(rule));
  std::filesystem::remove(path);
  return judge_dump(rule, gpu::Policy::fp32, dump);
}

bool all_hold(const std::vector<gpu::check::Verdict> &verdicts) {
  for (const auto &v : verdicts) {
    INFO(v.summary());
    if (!v.holds())
      return false;
  }
  return true;
}

} // namespace

TEST_CASE("check_dump_a_correct_kernel_of_another_order_holds", "[twin]") {
  for (const KernelRule rule : gpu::all_kernel_rules)
    for (const DType t : {DType::bf16, DType::fp16}) {
      INFO(name_of(rule) << " " << gpu::dtype_name(t));
      const auto verdicts = judged(rule, dump_of(correct_kernel(rule, t)));
      // o, final_state, dq, dk, dv, dg, dh0, and dbeta or da and db where the rule has them
      CHECK(verdicts.size() == 7u + has_beta(rule) + 2u * has_ab(rule));
      CHECK(all_hold(verdicts));
    }
}

TEST_CASE("check_dump_a_planted_error_fails", "[twin]") {
  for (const KernelRule rule : gpu::all_kernel_rules) {
    INFO(name_of(rule));
    Dumped r = correct_kernel(rule, DType::bf16);
    io::Safetensors f = dump_of(r);
    std::vector<double> &o = f.tensors["o"].values;
    double largest = 0;
    for (double x : o)
      largest = std::max(largest, std::abs(x));
    o[5] += 0.05 * largest; // one element off by 5% of the largest: 13 bf16 roundings
    CHECK_FALSE(all_hold(judged(rule, f)));
    f = dump_of(r);
    for (double &x : f.tensors["d" + gate_tensor(rule)].values) // a gradient, 1% off
      x *= 0.99;
    CHECK_FALSE(all_hold(judged(rule, f)));
    f = dump_of(r);
    f.tensors["dk"].values[3] = std::nan("");
    CHECK_FALSE(all_hold(judged(rule, f)));
    if (has_ab(rule)) { // a and b exchanged in the kernel's gradients
      f = dump_of(r);
      std::swap(f.tensors["da"], f.tensors["db"]);
      CHECK_FALSE(all_hold(judged(rule, f)));
    }
  }
}

TEST_CASE("check_dump_refuses_bad_dumps", "[twin]") {
  const Dumped r = correct_kernel(KernelRule::gla, DType::bf16);
  io::Safetensors f = dump_of(r);
  f.tensors.erase("o");
  CHECK_THROWS_AS(judged(KernelRule::gla, f), InputError);
  f = dump_of(r);
  f.tensors.erase("dq");
  CHECK_THROWS_AS(judged(KernelRule::gla, f), InputError);
  f = dump_of(r);
  f.tensors["o"].shape = {f.tensors["o"].values.size()};
  CHECK_THROWS_AS(judged(KernelRule::gla, f), InputError);
  f = dump_of(r);
  f.metadata["cu_seqlens"] = "0,x";
  CHECK_THROWS_AS(judged(KernelRule::gla, f), InputError);
  f = dump_of(correct_kernel(KernelRule::dplr_fla, DType::bf16)); // its gate named g, not gk
  f.tensors["g"] = f.tensors.at("gk");
  f.tensors.erase("gk");
  CHECK_THROWS_AS(judged(KernelRule::dplr_fla, f), InputError);
  const auto path = std::filesystem::temp_directory_path() / "ruleproof_truncated.safetensors";
  const std::string bytes = io::safetensors_bytes(dump_of(r));
  reports::write_file_atomically(path, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_AS(read_kernel_dump<float>(path), InputError);
  std::filesystem::remove(path);
}

TEST_CASE("check_dump_reads_cu_seqlens_as_flash_linear_attention_passes_them", "[twin]") {
  // An I64 tensor, "0,40,70" and the JSON list "[0, 40, 70]" give the same sequences.
  Dumped r = correct_kernel(KernelRule::gla, DType::bf16);
  io::Safetensors f = dump_of(r);
  const auto path = std::filesystem::temp_directory_path() / "ruleproof_cu_seqlens.safetensors";
  const auto offsets = [&](io::Safetensors file) {
    io::write_safetensors(path, file);
    const KernelDump<float> d = read_kernel_dump<float>(path, "g");
    std::filesystem::remove(path);
    return d.opts.cu_seqlens;
  };
  const std::vector<std::int64_t> want{0, 40, 70};
  f.metadata["cu_seqlens"] = "0,40,70";
  CHECK(offsets(f) == want);
  f.metadata["cu_seqlens"] = "[0, 40, 70]";
  CHECK(offsets(f) == want);
  f.metadata.erase("cu_seqlens");
  f.tensors["cu_seqlens"] = io::StoredTensor{io::DType::i64, {3}, {0, 40, 70}};
  CHECK(offsets(f) == want);
}

TEST_CASE("a_double_truth_certified_on_a_sample_gives_the_float128_verdicts", "[twin]") {
  // Two heads: certified on one, the double truth must give every verdict float128 gives, its
  // ratios within 2^-10 of theirs, and say which head it ran in float128.
  for (const KernelRule rule : {KernelRule::gla, KernelRule::kda, KernelRule::dplr_fla}) {
    INFO(name_of(rule));
    const Dumped r = correct_kernel(rule, DType::bf16);
    const auto path = std::filesystem::temp_directory_path() / "ruleproof_truth.safetensors";
    io::write_safetensors(path, dump_of(r));
    const KernelDump<float> dump = read_kernel_dump<float>(path, gate_tensor(rule));
    std::filesystem::remove(path);
    TruthOptions sampled;
    sampled.scalar = Truth::double_certified;
    sampled.sample_heads = 1;
    const DumpReference d = dump_reference(rule, gpu::Policy::tensor_core, dump, sampled);
    const DumpReference q = dump_reference(rule, gpu::Policy::tensor_core, dump, {});
    CHECK(d.truth_scalar == "double");
    CHECK(q.truth_scalar == "float128");
    REQUIRE(d.certification.heads.size() == 1);
    const auto vd = judge_dump(rule, dump, d), vq = judge_dump(rule, dump, q);
    REQUIRE(vd.size() == vq.size());
    for (std::size_t i = 0; i < vd.size(); ++i) {
      INFO(vd[i].summary() << "\n" << vq[i].summary());
      CHECK(d.certification.certifies(vd[i]));
      CHECK(d.certification.discrepancy.count(vd[i].output) == 1);
      CHECK(vd[i].holds() == vq[i].holds());
      CHECK(std::abs(vd[i].ratio() - vq[i].ratio()) <= 0x1p-10 * vq[i].ratio() + 1e-12);
    }
  }
}
