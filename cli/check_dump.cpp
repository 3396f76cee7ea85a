// ruleproof check-dump (see check_dump.hpp). Writes reports/out/check_dump.json and .md.
#include "check_dump.hpp"

#include <filesystem>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "exit_codes.hpp"
#include "gpu/twin.hpp"
#include "reference/core/float128.hpp"
#include "reports/atomic_write.hpp"

namespace ruleproof::cli {
namespace {

using gpu::DType;
using gpu::KernelRule;
using gpu::check::Verdict;

DType storage_of(io::DType t) {
  return t == io::DType::bf16 ? DType::bf16 : t == io::DType::f16 ? DType::fp16 : DType::fp32;
}

KernelRule kernel_rule_of(const std::string &name) {
  for (const KernelRule r : gpu::kernel_rules)
    if (gpu::rule_name(r) == name)
      return r;
  throw InputError("--rule", "'" + name +
                                 "' has no emulated twin; check-dump judges simple_gla, gla, "
                                 "gated_delta_rule and kda");
}

/// The kernel's tensor must have the truth's shape: anything else is a bad dump.
void expect_shape(const std::string &name, const Tensor<float> &kernel, const Shape &truth) {
  if (kernel.shape() != truth)
    throw InputError(name,
                     "shape " + shape_string(kernel.shape()) + ", expected " + shape_string(truth));
}

} // namespace

std::vector<Verdict> judge_dump(KernelRule rule, const KernelDump<float> &d) {
  const DType t = storage_of(d.storage);
  std::vector<Verdict> verdicts;
  gpu::check::Case sizes; // what summed_terms reads: the rule, T and K, as gpu-check has them
  sizes.rule = rule, sizes.T = d.in.q.dim(1), sizes.K = d.in.q.dim(3);
  const auto judge = [&](const std::string &name, DType stored, const Tensor<float> &kernel,
                         const Tensor<float> &twin, const Tensor<float128> &truth) {
    if (kernel.empty())
      return;
    expect_shape(name, kernel, truth.shape());
    verdicts.push_back(gpu::check::judge(name, stored, kernel, twin, gpu::to_double_tensor(truth),
                                         gpu::check::summed_terms(sizes, name)));
  };
  const Inputs<float128> in128 = gpu::widen(d.in);
  const gpu::StagedForward<float> twin = gpu::twin_forward(rule, t, d.in, d.opts);
  const gpu::StagedForward<float128> truth = gpu::chunk_forward_staged(rule, in128, d.opts);
  judge("o", t, d.out.o, twin.out.o, truth.out.o);
  judge("final_state", DType::fp32, d.out.final_state, twin.out.final_state, truth.out.final_state);
  if (!d.backward)
    return verdicts;
  const Grads<float> twin_grads = gpu::twin_backward(rule, t, d.in, d.ct, d.opts);
  const Grads<float128> true_grads = gpu::chunk_backward(rule, in128, gpu::widen(d.ct), d.opts);
  judge("dq", t, d.grads.dq, twin_grads.dq, true_grads.dq);
  judge("dk", t, d.grads.dk, twin_grads.dk, true_grads.dk);
  judge("dv", t, d.grads.dv, twin_grads.dv, true_grads.dv);
  judge("dg", DType::fp32, d.grads.dg, twin_grads.dg, true_grads.dg);
  judge("dbeta", DType::fp32, d.grads.dbeta, twin_grads.dbeta, true_grads.dbeta);
  judge("dh0", DType::fp32, d.grads.dh0, twin_grads.dh0, true_grads.dh0);
  return verdicts;
}

namespace {

struct CheckDumpArgs {
  std::string file, rule, out = "reports/out/check_dump.json";
};

int check_dump(const CheckDumpArgs &a) {
  const KernelRule rule = kernel_rule_of(a.rule);
  const KernelDump<float> dump = read_kernel_dump<float>(a.file);
  fmt::print("ruleproof check-dump: {} as {} ({} storage{})\n", a.file, a.rule,
             io::to_string(dump.storage), dump.backward ? ", forward and backward" : "");
  const std::vector<Verdict> verdicts = judge_dump(rule, dump);
  nlohmann::json report = {{"command", "check-dump"},
                           {"file", a.file},
                           {"rule", a.rule},
                           {"storage", io::to_string(dump.storage)},
                           {"twin_factor", gpu::check::twin_factor},
                           {"verdicts", nlohmann::json::array()}};
  std::string md =
      fmt::format("# ruleproof check-dump\n\nFile `{}`, rule `{}`, storage {}.\n\n"
                  "An output holds when it is finite and its max error against "
                  "the float128 truth is at most {} x max(twin error, one rounding "
                  "of its largest entry).\n\n| output | holds | kernel error | "
                  "twin error | allowed | error / allowed |\n|---|---|---|---|---|"
                  "---|\n",
                  a.file, a.rule, io::to_string(dump.storage), gpu::check::twin_factor);
  bool all_hold = true;
  fmt::print("{:<12} {:<6} {:>13} {:>13} {:>13} {:>8}\n", "output", "holds", "kernel error",
             "twin error", "allowed", "ratio");
  for (const Verdict &v : verdicts) {
    all_hold = all_hold && v.holds();
    fmt::print("{:<12} {:<6} {:>13.3e} {:>13.3e} {:>13.3e} {:>8.3g}\n", v.output,
               v.holds() ? "yes" : "NO", v.kernel_error, v.twin_error, v.allowed, v.ratio());
    md += fmt::format("| {} | {} | {:.3e} | {:.3e} | {:.3e} | {:.3g} |\n", v.output,
                      v.holds() ? "yes" : "**no**", v.kernel_error, v.twin_error, v.allowed,
                      v.ratio());
    report["verdicts"].push_back({{"output", v.output},
                                  {"holds", v.holds()},
                                  {"finite", v.finite},
                                  {"elements", v.elements},
                                  {"kernel_error", v.kernel_error},
                                  {"twin_error", v.twin_error},
                                  {"floor", v.floor},
                                  {"allowed", v.allowed},
                                  {"worst_index", v.worst_index},
                                  {"summary", v.summary()}});
  }
  report["holds"] = all_hold;
  const std::filesystem::path out(a.out);
  reports::write_file_atomically(out, report.dump(1) + "\n");
  reports::write_file_atomically(std::filesystem::path(out).replace_extension(".md"), md);
  fmt::print("{}; wrote {}\n", all_hold ? "every output holds" : "an output FAILS", a.out);
  return all_hold ? ok : check_failed;
}

} // namespace

void add_check_dump_command(CLI::App &app, int &status) {
  auto args = std::make_shared<CheckDumpArgs>();
  CLI::App *cmd = app.add_subcommand(
      "check-dump",
      "Judge a kernel's outputs and gradients, dumped to a safetensors file, against the "
      "float128 truth and the emulated twin");
  cmd->add_option("file", args->file,
                  "The dump: q, k, v, g, beta, initial_state, o, final_state; for the backward "
                  "also do, dht, dq, dk, dv, dg, dbeta, dh0 (tools/dump_kernel.py writes one)")
      ->required();
  cmd->add_option("--rule", args->rule, "simple_gla, gla, gated_delta_rule or kda")->required();
  cmd->add_option("--out", args->out, "The JSON report (and a .md beside it)")
      ->capture_default_str();
  cmd->callback([args, &status] { status = check_dump(*args); });
}

} // namespace ruleproof::cli
