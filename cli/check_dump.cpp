// ruleproof check-dump (see check_dump.hpp). Writes reports/out/check_dump.json (the result
// format of reporting/result.hpp) and its summary.
#include "check_dump.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "exit_codes.hpp"
#include "gpu/twin_float128.hpp"
#include "option_checks.hpp"
#include "reference/core/calls.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/heads.hpp"
#include "report_output.hpp"
#include "reporting/result.hpp"

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
    if (name_of(r) == name)
      return r;
  throw InputError("--rule", "'" + name +
                                 "' has no emulated twin; check-dump judges simple_gla, gla, "
                                 "gated_delta_rule, kda, dplr_fla and gated_oja");
}

/// The type the kernel stored output `name` in (fp32 when the dump lacks it).
DType output_type(const KernelDump<float> &d, const std::string &name) {
  const auto it = d.types.find(name);
  return it == d.types.end() ? DType::fp32 : storage_of(it->second);
}

/// The kernel's tensor must have the truth's shape: anything else is a bad dump.
void expect_shape(const std::string &name, const Tensor<float> &kernel, const Shape &truth) {
  if (kernel.shape() != truth)
    throw InputError(name,
                     "shape " + shape_string(kernel.shape()) + ", expected " + shape_string(truth));
}

} // namespace

std::string gate_tensor(KernelRule rule) {
  return rule == KernelRule::dplr_fla ? "gk" : rule == KernelRule::gated_oja ? "gv" : "g";
}

gpu::Policy policy_named(const std::string &name) {
  if (const auto p = gpu::policy_of(name))
    return *p;
  std::string known;
  for (const gpu::Policy p : gpu::all_policies)
    known += (known.empty() ? "" : ", ") + gpu::policy_name(p);
  throw InputError("--policy", "'" + name + "' is not a precision policy; known: " + known);
}

emulation::Roundings dump_roundings(gpu::Policy policy, const KernelDump<float> &d) {
  try {
    return gpu::roundings_or_throw(policy, storage_of(d.storage));
  } catch (const std::invalid_argument &e) {
    throw InputError("--policy", e.what());
  }
}

template <class S>
std::vector<std::pair<std::string, const Tensor<S> *>>
named_outputs(KernelRule rule, const Output<S> &out, const Grads<S> &g) {
  return {{"o", &out.o},       {"final_state", &out.final_state},
          {"dq", &g.dq},       {"dk", &g.dk},
          {"dv", &g.dv},       {"d" + gate_tensor(rule), &g.dg},
          {"dbeta", &g.dbeta}, {"da", &g.da},
          {"db", &g.db},       {"dh0", &g.dh0}};
}

/// Every input the rule takes must be in the dump: the twin and the truth run on them.
void expect_rule_inputs(KernelRule rule, const KernelDump<float> &d) {
  const std::string rule_name(name_of(rule));
  const auto need = [&](const std::string &name, const Tensor<float> &x) {
    if (x.empty())
      throw InputError(name, "missing from the dump (" + rule_name + " takes it)");
  };
  need(gate_tensor(rule), d.in.g);
  if (has_beta(rule))
    need("beta", d.in.beta);
  if (has_ab(rule))
    need("a", d.in.a), need("b", d.in.b);
}

namespace {

/// A tensor of the dump's in S (exactly: every float is a double and a float128).
template <Scalar S> Tensor<S> in_scalar(const Tensor<float> &t) {
  return t.map<S>([](float x) { return S(x); });
}
template <Scalar S> Inputs<S> in_scalar(const Inputs<float> &in) {
  return {in_scalar<S>(in.q),    in_scalar<S>(in.k),  in_scalar<S>(in.v), in_scalar<S>(in.g),
          in_scalar<S>(in.beta), in_scalar<S>(in.h0), in_scalar<S>(in.a), in_scalar<S>(in.b)};
}

/// The truth of a call in S, read back as double: its outputs and (with a backward) gradients.
template <Scalar S>
void truth_in(KernelRule rule, const Inputs<float> &in, const Cotangents<float> &ct,
              const Options &opts, bool backward, Output<double> &out, Grads<double> &grads) {
  const Inputs<S> x = in_scalar<S>(in);
  const Output<S> o = gpu::chunk_forward(rule, x, opts);
  out = {gpu::to_double_tensor(o.o), gpu::to_double_tensor(o.final_state)};
  if (!backward)
    return;
  const Grads<S> g = gpu::chunk_backward(
      rule, x, Cotangents<S>{in_scalar<S>(ct.d_o), in_scalar<S>(ct.d_ht)}, opts);
  grads = {gpu::to_double_tensor(g.dq),    gpu::to_double_tensor(g.dk),
           gpu::to_double_tensor(g.dv),    gpu::to_double_tensor(g.dg),
           gpu::to_double_tensor(g.dbeta), gpu::to_double_tensor(g.dh0),
           gpu::to_double_tensor(g.da),    gpu::to_double_tensor(g.db)};
}

/// The (sequence, head) pairs of a dump that hold rows, and `count` of them spread evenly (all
/// when there are no more).
std::vector<std::pair<std::size_t, std::size_t>> sampled_heads(const KernelDump<float> &d,
                                                               std::size_t count) {
  std::vector<std::pair<std::size_t, std::size_t>> all, sample;
  const std::size_t H = d.in.q.dim(2);
  for (const Sequence &s : sequences_of(d.in.q.dim(0), d.in.q.dim(1), d.opts))
    for (std::size_t h = 0; h < H && s.length() > 0; ++h)
      all.emplace_back(s.index, h);
  if (all.size() <= count)
    return all;
  for (std::size_t i = 0; i < count; ++i)
    sample.push_back(all[count == 1 ? 0 : i * (all.size() - 1) / (count - 1)]);
  return sample;
}

/// Certifies a double truth: the float128 truth of each sampled head, run alone, against the
/// double truth's rows of that head, output by output.
Certification certify(KernelRule rule, const KernelDump<float> &d, const DumpReference &r,
                      std::size_t sample, unsigned threads) {
  Certification c;
  c.heads = sampled_heads(d, sample);
  const std::size_t K = d.in.q.dim(3), V = d.in.v.dim(3);
  const auto seqs = sequences_of(d.in.q.dim(0), d.in.q.dim(1), d.opts);
  const auto truth = named_outputs(rule, r.truth, r.truth_grads);
  // Each sampled head's float128 truth, run alone (the heads in parallel).
  std::vector<Output<double>> outs(c.heads.size());
  std::vector<Grads<double>> grads(c.heads.size());
  ruleproof::detail::parallel_for(c.heads.size(), threads, [&](std::size_t i) {
    const auto [n, h] = c.heads[i];
    const CallPart part = part_of(seqs[n], h, h + 1);
    Options opts = d.opts;
    opts.cu_seqlens.clear();
    opts.output_final_state = true;
    opts.threads = 1;
    const Inputs<float> in =
        part_of<float>(d.in, part, state_part_of<float>(d.in.h0, n, part, K, V));
    const Cotangents<float> ct{part_of<float>(d.ct.d_o, part),
                               d.ct.d_ht.empty() ? Tensor<float>()
                                                 : state_part_of<float>(d.ct.d_ht, n, part, K, V)};
    truth_in<float128>(rule, in, ct, opts, d.backward, outs[i], grads[i]);
  });
  for (std::size_t i = 0; i < c.heads.size(); ++i) {
    const auto [n, h] = c.heads[i];
    const CallPart part = part_of(seqs[n], h, h + 1);
    const auto exact = named_outputs(rule, outs[i], grads[i]);
    for (std::size_t j = 0; j < truth.size(); ++j) {
      const Tensor<double> &whole = *truth[j].second, &alone = *exact[j].second;
      if (whole.empty() || alone.empty())
        continue;
      const bool state = truth[j].first == "final_state" || truth[j].first == "dh0";
      const Tensor<double> mine =
          state ? state_part_of<double>(whole, n, part, K, V) : part_of<double>(whole, part);
      double &disc = c.discrepancy[truth[j].first], &largest = c.largest[truth[j].first];
      for (std::size_t e = 0; e < mine.size(); ++e) {
        disc = std::max(disc, std::abs(mine[e] - alone[e]));
        largest = std::max(largest, std::abs(alone[e]));
      }
    }
  }
  return c;
}

} // namespace

bool Certification::certifies(const gpu::check::Verdict &v) const {
  const auto it = discrepancy.find(v.output);
  return it == discrepancy.end() || it->second <= v.allowed * certified_fraction;
}

DumpReference dump_reference(KernelRule rule, gpu::Policy policy, const KernelDump<float> &d,
                             const TruthOptions &truth) {
  expect_rule_inputs(rule, d);
  dump_roundings(policy, d); // InputError when the policy cannot apply
  const DType t = storage_of(d.storage);
  gpu::OutputTypes types;
  for (const auto &[name, type] : {std::pair{"o", &types.o},
                                   {"final_state", &types.final_state},
                                   {"dq", &types.dq},
                                   {"dk", &types.dk},
                                   {"dv", &types.dv},
                                   {"dbeta", &types.dbeta},
                                   {"da", &types.da},
                                   {"db", &types.db},
                                   {"dh0", &types.dh0}})
    *type = output_type(d, name);
  types.dg = output_type(d, "d" + gate_tensor(rule));
  Options opts = d.opts;
  opts.threads = truth.threads;
  const auto told = [&](const std::string &what) {
    if (truth.progress)
      truth.progress(what);
  };
  DumpReference r;
  r.twin = gpu::twin_output(rule, policy, t, d.in, opts, types);
  if (d.backward)
    r.twin_grads = gpu::twin_backward(rule, policy, t, d.in, d.ct, opts, types);
  told("the twin under " + gpu::policy_name(policy));
  const bool sampled =
      sampled_heads(d, truth.sample_heads).size() < sampled_heads(d, SIZE_MAX).size();
  r.truth_scalar =
      truth.scalar == Truth::double_certified || (truth.scalar == Truth::automatic && sampled)
          ? "double"
          : "float128";
  if (r.truth_scalar == "double") {
    truth_in<double>(rule, d.in, d.ct, opts, d.backward, r.truth, r.truth_grads);
    told("the truth in double");
    r.certification = certify(rule, d, r, truth.sample_heads, truth.threads);
    told("the truth in float128 on " + std::to_string(r.certification.heads.size()) + " heads");
  } else {
    truth_in<float128>(rule, d.in, d.ct, opts, d.backward, r.truth, r.truth_grads);
    told("the truth in float128");
  }
  return r;
}

std::vector<Verdict> judge_dump(KernelRule rule, const KernelDump<float> &d,
                                const DumpReference &ref,
                                std::vector<reports::ErrorProfile> *profiles) {
  std::vector<Verdict> verdicts;
  gpu::check::Case sizes; // what summed_terms reads: the rule, T, K and V, as gpu-check has them
  sizes.rule = rule, sizes.T = d.in.q.dim(1), sizes.K = d.in.q.dim(3), sizes.V = d.in.v.dim(3);
  const auto kernel = named_outputs(rule, d.out, d.grads);
  const auto twin = named_outputs(rule, ref.twin, ref.twin_grads);
  const auto truth = named_outputs(rule, ref.truth, ref.truth_grads);
  for (std::size_t i = 0; i < kernel.size(); ++i) {
    const std::string &name = kernel[i].first;
    const Tensor<float> &k = *kernel[i].second, &tw = *twin[i].second;
    const Tensor<double> &tr = *truth[i].second;
    if (k.empty())
      continue;
    expect_shape(name, k, tr.shape());
    verdicts.push_back(gpu::check::judge(
        name, output_type(d, name), k, tw, tr, gpu::check::summed_terms(sizes, name), 0,
        gpu::check::is_gate_gradient(name)
            ? gpu::check::gate_gradient_terms(rule, d.in, d.ct, ref.truth_grads, d.opts)
            : 0));
    const bool along_time = reports::where_in(name, {0, 0, 0}).time.has_value(); // not a state
    if (profiles && along_time)
      for (const auto &[what, computed] : {std::pair{"kernel", &k}, std::pair{"twin", &tw}}) {
        reports::ErrorProfile p = reports::error_profile(*computed, tr, d.opts.chunk_size);
        p.rule = name_of(rule), p.output = name;
        p.scalar = gpu::dtype_name(output_type(d, name));
        p.compared =
            std::string(what) + " vs the " + ref.truth_scalar + " truth on the dump's inputs";
        p.case_text = name + " " + shape_string(k.shape());
        profiles->push_back(std::move(p));
      }
  }
  return verdicts;
}

std::vector<Verdict> judge_dump(KernelRule rule, gpu::Policy policy, const KernelDump<float> &d,
                                std::vector<reports::ErrorProfile> *profiles) {
  return judge_dump(rule, d, dump_reference(rule, policy, d, TruthOptions{}), profiles);
}

namespace {

struct CheckDumpArgs {
  std::string file, rule, policy = gpu::policy_name(default_policy), truth = "auto",
                          out = "reports/out/check_dump.json", summary;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::size_t certify_heads = TruthOptions{}.sample_heads;
};

Truth truth_named(const std::string &name) {
  if (name == "auto")
    return Truth::automatic;
  if (name == "float128")
    return Truth::float128;
  if (name == "double")
    return Truth::double_certified;
  throw InputError("--truth", "'" + name + "' is not auto, float128 or double");
}

/// The JSON of a double truth's certificate: the heads it ran, and per output the largest
/// difference from float128 there and the digits it agreed to.
nlohmann::json certification_json(const Certification &c) {
  nlohmann::json j{{"heads", nlohmann::json::array()}, {"outputs", nlohmann::json::object()}};
  for (const auto &[n, h] : c.heads)
    j["heads"].push_back({{"sequence", n}, {"head", h}});
  for (const auto &[name, disc] : c.discrepancy) {
    const double largest = c.largest.at(name);
    j["outputs"][name] = {{"discrepancy", disc},
                          {"digits", disc > 0 && largest > 0 ? -std::log10(disc / largest) : 17.0}};
  }
  return j;
}

/// How many of a kernel tensor's elements are NaN, and how many infinite.
std::pair<std::size_t, std::size_t> non_finite_counts(const Tensor<float> &t) {
  std::size_t nan = 0, inf = 0;
  for (std::size_t e = 0; e < t.size(); ++e)
    nan += std::isnan(t[e]) ? 1 : 0, inf += std::isinf(t[e]) ? 1 : 0;
  return {nan, inf};
}

int check_dump(const CheckDumpArgs &a) {
  const auto started = std::chrono::steady_clock::now();
  expect_report_writable(a.out, a.summary);
  const KernelRule rule = kernel_rule_of(a.rule);
  const gpu::Policy policy = policy_named(a.policy);
  const Truth truth_scalar = truth_named(a.truth);
  const KernelDump<float> dump = read_kernel_dump<float>(a.file, gate_tensor(rule));
  const emulation::Roundings roundings = dump_roundings(policy, dump);
  fmt::print("ruleproof check-dump: {} as {} ({} inputs{}, chunk size {}), twin policy {}\n",
             a.file, a.rule, io::to_string(dump.storage),
             dump.backward ? ", forward and backward" : "", dump.opts.chunk_size, a.policy);
  TruthOptions truth{truth_scalar, a.certify_heads, a.threads, {}};
  truth.progress = [&](const std::string &what) {
    fmt::print("  {} ({:.1f} s)\n", what,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    std::fflush(stdout);
  };
  truth.progress("read the dump");
  DumpReference ref = dump_reference(rule, policy, dump, truth);
  std::vector<reports::ErrorProfile> profiles;
  std::vector<Verdict> verdicts = judge_dump(rule, dump, ref, &profiles);
  if (ref.truth_scalar == "double") {
    std::string uncertified;
    for (const Verdict &v : verdicts)
      if (!ref.certification.certifies(v))
        uncertified += (uncertified.empty() ? "" : ", ") + v.output;
    fmt::print("truth: double, certified against float128 on {} of the dump's heads{}\n",
               ref.certification.heads.size(),
               uncertified.empty() ? "" : "; not for " + uncertified + ": float128 on every head");
    if (!uncertified.empty()) {
      truth.scalar = Truth::float128;
      ref = dump_reference(rule, policy, dump, truth);
      profiles.clear();
      verdicts = judge_dump(rule, dump, ref, &profiles);
    }
  }
  reports::Run run = reports::start_run("check-dump");
  run.details = {{"file", a.file},
                 {"storage", io::to_string(dump.storage)},
                 {"chunk_size", dump.opts.chunk_size},
                 {"policy", a.policy},
                 {"operand_roundoff", gpu::roundoff(roundings.operand_bits)},
                 {"stored_roundoff", gpu::roundoff(roundings.stored_bits)},
                 {"twin_factor", gpu::check::twin_factor},
                 {"truth", ref.truth_scalar},
                 {"backward", dump.backward},
                 {"profiles", nlohmann::json::array()}};
  if (ref.truth_scalar == "double")
    run.details["certification"] = certification_json(ref.certification);
  for (const reports::ErrorProfile &p : profiles)
    run.details["profiles"].push_back(reports::to_json(p));
  const auto outputs = named_outputs(rule, dump.out, dump.grads);
  const std::map<std::string, const Tensor<float> *> tensors(outputs.begin(), outputs.end());
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
      r.digits = digits_agreed(v.kernel_error / v.truth_max);
    r.cases = 1, r.failures = v.holds() ? 0 : 1;
    r.replay.command =
        "ruleproof check-dump " + reports::shell_quote(a.file) + " --rule " + a.rule +
        (a.policy == gpu::policy_name(default_policy) ? "" : " --policy " + a.policy);
    const auto t = tensors.find(v.output);
    if (t != tensors.end())
      r.where = reports::where_in(v.output, reports::unravel(v.worst_index, t->second->shape()),
                                  v.summary());
    const auto [nan, inf] = t == tensors.end() ? std::pair<std::size_t, std::size_t>{0, 0}
                                               : non_finite_counts(*t->second);
    r.details = {{"elements", v.elements},
                 {"nan", nan},
                 {"inf", inf},
                 {"twin_error", v.twin_error},
                 {"floor", v.floor},
                 {"roundoff", v.roundoff},
                 {"truth_rms", v.truth_rms},
                 {"kernel_rms_error", v.kernel_rms},
                 {"twin_rms_error", v.twin_rms},
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
      "truth (float128, or double certified against it) and the emulated twin of the kernel's "
      "precision policy");
  cmd->add_option("file", args->file,
                  "The dump: q, k, v, g (dplr: gk, gated_oja: gv), beta, a, b, initial_state, "
                  "cu_seqlens, o, final_state; for the backward also do, dht, dq, dk, dv, dg (dgk, "
                  "dgv), dbeta, da, db, dh0; metadata scale, chunk_size (default 64) "
                  "(ruleproof.dump of the Python package in python/ writes one)")
      ->required();
  cmd->add_option("--rule", args->rule,
                  "simple_gla, gla, gated_delta_rule, kda, dplr_fla or gated_oja")
      ->required();
  cmd->add_option("--policy", args->policy,
                  "The twin's arithmetic: tensor-core (products of 16-bit operands, 16-bit "
                  "intermediates: flash-linear-attention's kernels), tf32 (products of tf32 "
                  "operands, for fp32 inputs) or fp32 (every product in fp32, as "
                  "gpu-check's kernels)")
      ->capture_default_str();
  cmd->add_option("--truth", args->truth,
                  "The truth's scalar: float128; double, certified against float128 on "
                  "--certify-heads of the dump's heads, each run alone (float128 on every head "
                  "where an output's difference there exceeds 2^-10 of its allowance); auto: "
                  "float128 when the dump has no more heads than that, else double")
      ->capture_default_str();
  cmd->add_option("--certify-heads", args->certify_heads,
                  "How many (sequence, head) pairs, spread evenly, certify a double truth")
      ->check(at_least_one)
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "Heads computed in parallel on this many threads")
      ->check(at_least_one)
      ->capture_default_str();
  cmd->add_option("--out", args->out, "The JSON report (the summary goes beside it)")
      ->capture_default_str();
  add_summary_option(cmd, args->summary);
  cmd->callback([args, &status] { status = check_dump(*args); });
}

namespace {

/// The shape a rule's log-gate has in a call, flash-linear-attention's layout.
std::string gate_shape(KernelRule rule) {
  switch (gate_of(rule)) {
  case GateKind::scalar: return "[B, T, H]";
  case GateKind::key: return "[B, T, H, K]";
  case GateKind::value: return "[B, T, H, V]";
  case GateKind::none: break;
  }
  return "none";
}

int list_rules(bool json) {
  nlohmann::json rules = nlohmann::json::array();
  if (!json)
    fmt::print("{:<18} {:<5} {:<14} {:<5} {}\n", "rule", "gate", "gate shape", "beta", "a, b");
  for (const KernelRule r : gpu::all_kernel_rules) {
    const std::string name(name_of(r));
    if (json)
      rules.push_back({{"name", name},
                       {"gate", gate_tensor(r)},
                       {"gate_shape", gate_shape(r)},
                       {"beta", has_beta(r)},
                       {"a_b", has_ab(r)}});
    else
      fmt::print("{:<18} {:<5} {:<14} {:<5} {}\n", name, gate_tensor(r), gate_shape(r),
                 has_beta(r) ? "yes" : "no", has_ab(r) ? "yes" : "no");
  }
  if (json)
    fmt::print("{}\n", nlohmann::json{{"rules", rules}}.dump(1));
  return ok;
}

} // namespace

void add_rules_command(CLI::App &app, int &status) {
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd = app.add_subcommand(
      "rules", "List the rules check-dump judges and the tensors each call takes: q, k [B, T, H, "
               "K], v [B, T, H, V], the log-gate (its name and shape), beta [B, T, H] and a, b "
               "[B, T, H, K] where the rule takes them");
  cmd->add_flag("--json", *json, "Print them as JSON (what the Python package reads)");
  cmd->callback([json, &status] { status = list_rules(*json); });
}

} // namespace ruleproof::cli
