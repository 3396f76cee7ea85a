// ruleproof check-dump (see check_dump.hpp). Writes reports/out/check_dump.json (the result
// format of reports/result.hpp) and its summary.
#include "check_dump.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "exit_codes.hpp"
#include "gpu/twin.hpp"
#include "option_checks.hpp"
#include "reference/core/float128.hpp"
#include "report_output.hpp"
#include "reports/result.hpp"

namespace ruleproof::cli {
namespace {

using gpu::DType;
using gpu::KernelRule;
using gpu::check::Verdict;

DType storage_of(io::DType t) {
  return t == io::DType::bf16 ? DType::bf16 : t == io::DType::f16 ? DType::fp16 : DType::fp32;
}

KernelRule kernel_rule_of(const std::string &name) {
  for (const KernelRule r : gpu::all_kernel_rules)
    if (gpu::rule_name(r) == name)
      return r;
  throw InputError("--rule", "'" + name +
                                 "' has no emulated twin; check-dump judges simple_gla, gla, "
                                 "gated_delta_rule, kda, dplr_fla and gated_oja");
}

/// The kernel's tensor must have the truth's shape: anything else is a bad dump.
void expect_shape(const std::string &name, const Tensor<float> &kernel, const Shape &truth) {
  if (kernel.shape() != truth)
    throw InputError(name,
                     "shape " + shape_string(kernel.shape()) + ", expected " + shape_string(truth));
}

} // namespace

std::string gate_tensor(KernelRule rule) { return rule == KernelRule::dplr_fla ? "gk" : "g"; }

std::vector<Verdict> judge_dump(KernelRule rule, const KernelDump<float> &d,
                                std::vector<reports::ErrorProfile> *profiles) {
  const DType t = storage_of(d.storage);
  std::vector<Verdict> verdicts;
  gpu::check::Case sizes; // what summed_terms reads: the rule, T and K, as gpu-check has them
  sizes.rule = rule, sizes.T = d.in.q.dim(1), sizes.K = d.in.q.dim(3);
  const auto judge = [&](const std::string &name, DType stored, const Tensor<float> &kernel,
                         const Tensor<float> &twin, const Tensor<float128> &truth) {
    if (kernel.empty())
      return;
    expect_shape(name, kernel, truth.shape());
    const Tensor<double> truth_double = gpu::to_double_tensor(truth);
    verdicts.push_back(gpu::check::judge(name, stored, kernel, twin, truth_double,
                                         gpu::check::summed_terms(sizes, name)));
    const bool along_time = reports::where_in(name, {0, 0, 0}).time.has_value(); // not a state
    if (profiles && along_time)
      for (const auto &[what, computed] :
           {std::pair{"kernel", &kernel}, std::pair{"twin", &twin}}) {
        reports::ErrorProfile p =
            reports::error_profile(*computed, truth_double, gpu::kernel_chunk_size);
        p.rule = gpu::rule_name(rule), p.output = name, p.scalar = gpu::dtype_name(stored);
        p.compared = std::string(what) + " vs the float128 truth on the dump's inputs";
        p.case_text = name + " " + shape_string(kernel.shape());
        profiles->push_back(std::move(p));
      }
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
  judge("d" + gate_tensor(rule), DType::fp32, d.grads.dg, twin_grads.dg, true_grads.dg);
  judge("dbeta", DType::fp32, d.grads.dbeta, twin_grads.dbeta, true_grads.dbeta);
  judge("da", t, d.grads.da, twin_grads.da, true_grads.da);
  judge("db", t, d.grads.db, twin_grads.db, true_grads.db);
  judge("dh0", DType::fp32, d.grads.dh0, twin_grads.dh0, true_grads.dh0);
  return verdicts;
}

namespace {

struct CheckDumpArgs {
  std::string file, rule, out = "reports/out/check_dump.json", summary;
};

int check_dump(const CheckDumpArgs &a) {
  expect_report_writable(a.out, a.summary);
  const KernelRule rule = kernel_rule_of(a.rule);
  const KernelDump<float> dump = read_kernel_dump<float>(a.file, gate_tensor(rule));
  fmt::print("ruleproof check-dump: {} as {} ({} storage{})\n", a.file, a.rule,
             io::to_string(dump.storage), dump.backward ? ", forward and backward" : "");
  std::vector<reports::ErrorProfile> profiles;
  const std::vector<Verdict> verdicts = judge_dump(rule, dump, &profiles);
  reports::Run run = reports::start_run("check-dump");
  run.details = {{"file", a.file},
                 {"storage", io::to_string(dump.storage)},
                 {"twin_factor", gpu::check::twin_factor},
                 {"backward", dump.backward},
                 {"profiles", nlohmann::json::array()}};
  for (const reports::ErrorProfile &p : profiles)
    run.details["profiles"].push_back(reports::to_json(p));
  const std::map<std::string, const Tensor<float> *> tensors{
      {"o", &dump.out.o},           {"final_state", &dump.out.final_state},
      {"dq", &dump.grads.dq},       {"dk", &dump.grads.dk},
      {"dv", &dump.grads.dv},       {"d" + gate_tensor(rule), &dump.grads.dg},
      {"dbeta", &dump.grads.dbeta}, {"da", &dump.grads.da},
      {"db", &dump.grads.db},       {"dh0", &dump.grads.dh0}};
  bool all_hold = true;
  fmt::print("{:<12} {:<6} {:>13} {:>13} {:>13} {:>8}\n", "output", "holds", "kernel error",
             "twin error", "allowed", "ratio");
  for (const Verdict &v : verdicts) {
    all_hold = all_hold && v.holds();
    fmt::print("{:<12} {:<6} {:>13.3e} {:>13.3e} {:>13.3e} {:>8.3g}\n", v.output,
               v.holds() ? "yes" : "NO", v.kernel_error, v.twin_error, v.allowed, v.ratio());
    reports::Result r;
    r.id = a.rule + "/" + v.output;
    r.kind = "dump";
    r.rule = a.rule;
    r.scalar = gpu::dtype_name(v.stored);
    r.property = v.output.rfind('d', 0) == 0 && v.output != "dh" ? "backward" : "forward";
    r.output = v.output;
    r.verdict = v.holds() ? reports::Verdict::holds : reports::Verdict::fails;
    r.worst_error = v.finite ? v.kernel_error : std::numeric_limits<double>::quiet_NaN();
    r.allowed_error = v.allowed;
    r.error_over_allowed = v.ratio();
    if (v.finite && v.kernel_error > 0 && v.truth_max > 0)
      r.digits = -std::log10(v.kernel_error / v.truth_max);
    r.cases = 1, r.failures = v.holds() ? 0 : 1;
    r.replay.command = "ruleproof check-dump " + reports::shell_quote(a.file) + " --rule " + a.rule;
    const auto t = tensors.find(v.output);
    if (t != tensors.end())
      r.where = reports::where_in(v.output, reports::unravel(v.worst_index, t->second->shape()),
                                  v.summary());
    r.details = {{"elements", v.elements},
                 {"twin_error", v.twin_error},
                 {"floor", v.floor},
                 {"finite", v.finite},
                 {"worst_index", v.worst_index}};
    run.results.push_back(std::move(r));
  }
  write_report(run, a.out, a.summary);
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
                  "The dump: q, k, v, g (dplr: gk), beta, a, b, initial_state, o, final_state; "
                  "for the backward also do, dht, dq, dk, dv, dg (dgk), dbeta, da, db, dh0 "
                  "(tools/dump_kernel.py writes one)")
      ->required();
  cmd->add_option("--rule", args->rule,
                  "simple_gla, gla, gated_delta_rule, kda, dplr_fla or gated_oja")
      ->required();
  cmd->add_option("--out", args->out, "The JSON report (the summary goes beside it)")
      ->capture_default_str();
  add_summary_option(cmd, args->summary);
  cmd->callback([args, &status] { status = check_dump(*args); });
}

} // namespace ruleproof::cli
