// write_large_dump: a dump at a real kernel's shape, to time `ruleproof check-dump` on it
// (bench/check_dump_speed.sh). Its inputs are drawn as gpu-check draws them (gpu/check.hpp,
// draw), with an initial state and dht; its "kernel" is the tensor-core twin itself (gpu/twin.hpp),
// a correct kernel of that precision, so the dump is a correct one. Not a test.
//
//   build/bench/write_large_dump --rule gla --B 4 --T 4096 --H 16 --K 128 --V 128 --out FILE
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "gpu/check.hpp"
#include "gpu/twin.hpp"
#include "io/safetensors.hpp"

using namespace ruleproof;

namespace {

io::DType io_type(gpu::DType t) {
  return t == gpu::DType::bf16   ? io::DType::bf16
         : t == gpu::DType::fp16 ? io::DType::f16
                                 : io::DType::f32;
}

void put(io::Safetensors &f, const std::string &name, gpu::DType t, const Tensor<float> &x) {
  if (x.empty())
    return;
  io::StoredTensor s{io_type(t), x.shape(), std::vector<double>(x.data(), x.data() + x.size())};
  f.tensors[name] = std::move(s);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("Write a correct dump at a real shape, for timing check-dump");
  std::string rule_name = "gla", dtype = "bf16", out;
  gpu::check::Case c;
  c.B = 4, c.T = 4096, c.H = 16, c.K = 128, c.V = 128;
  unsigned threads = 2;
  app.add_option("--rule", rule_name)->capture_default_str();
  app.add_option("--dtype", dtype, "bf16 or fp16")->capture_default_str();
  app.add_option("--B", c.B)->capture_default_str();
  app.add_option("--T", c.T)->capture_default_str();
  app.add_option("--H", c.H)->capture_default_str();
  app.add_option("--K", c.K)->capture_default_str();
  app.add_option("--V", c.V)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--out", out)->required();
  CLI11_PARSE(app, argc, argv);
  for (const gpu::KernelRule r : gpu::all_kernel_rules)
    if (name_of(r) == rule_name)
      c.rule = r;
  c.storage = dtype == "fp16" ? gpu::DType::fp16 : gpu::DType::bf16;
  c.has_h0 = c.has_dht = true;
  c.seed = 7;
  gpu::check::Drawn d = gpu::check::draw(c);
  d.opts.threads = threads;
  const auto types = gpu::OutputTypes::kernels_of(c.storage);
  const Output<float> o =
      gpu::twin_forward(c.rule, gpu::Policy::tensor_core, c.storage, d.in, d.opts, types).out;
  const Grads<float> g =
      gpu::twin_backward(c.rule, gpu::Policy::tensor_core, c.storage, d.in, d.ct, d.opts, types);
  const std::string gate = c.rule == gpu::KernelRule::dplr_fla    ? "gk"
                           : c.rule == gpu::KernelRule::gated_oja ? "gv"
                                                                  : "g";
  const gpu::DType t = c.storage, f32 = gpu::DType::fp32;
  io::Safetensors f;
  put(f, "q", t, d.in.q), put(f, "k", t, d.in.k), put(f, "v", t, d.in.v);
  put(f, gate, f32, d.in.g), put(f, "beta", f32, d.in.beta);
  put(f, "a", t, d.in.a), put(f, "b", t, d.in.b), put(f, "initial_state", f32, d.in.h0);
  put(f, "o", t, o.o), put(f, "final_state", f32, o.final_state);
  put(f, "do", t, d.ct.d_o), put(f, "dht", f32, d.ct.d_ht);
  put(f, "dq", t, g.dq), put(f, "dk", t, g.dk), put(f, "dv", t, g.dv);
  put(f, "d" + gate, f32, g.dg), put(f, "dbeta", f32, g.dbeta);
  put(f, "da", t, g.da), put(f, "db", t, g.db), put(f, "dh0", f32, g.dh0);
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.17g", *d.opts.scale);
  f.metadata["scale"] = scale;
  f.metadata["chunk_size"] = "64";
  io::write_safetensors(out, f);
  std::printf("wrote %s (%s, B=%zu T=%zu H=%zu K=%zu V=%zu)\n", out.c_str(), rule_name.c_str(), c.B,
              c.T, c.H, c.K, c.V);
  return 0;
}
