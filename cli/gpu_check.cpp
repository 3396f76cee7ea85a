// ruleproof gpu-check: every check of gpu/check.hpp (forward outputs and stages, gradients,
// causality, varlen against each sequence alone) on fixed cases (every K, V in {64, 128},
// ragged T, a varlen batch with empty sequences) and on random cases drawn from the
// generators of gpu/check_gen.hpp with seeds derived from --seed; a failing random case is
// shrunk through the generator. Writes reports/out/gpu_check.json (the result format of
// reporting/result.hpp), its summary, and gpu_check.md (every output's worst errors).
#include "gpu_check.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "exit_codes.hpp"
#include "gpu/check_gen.hpp"
#include "gpu/device.hpp"
#include "option_checks.hpp"
#include "reference/core/compare.hpp"
#include "report_output.hpp"
#include "reporting/atomic_write.hpp"
#include "reporting/progress.hpp"

namespace ruleproof::cli {

namespace {

using namespace ruleproof::gpu::check;

struct GpuCheckOptions {
  std::vector<std::string> rules{"simple_gla", "gla",      "gated_delta_rule",
                                 "kda",        "dplr_fla", "gated_oja"};
  std::vector<std::string> dtypes{"bf16", "fp16"};
  std::size_t cases = 6;
  std::uint64_t seed = 1;
  std::string out = "reports/out/gpu_check.json";
  std::string summary;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool require_gpu = false;
  std::size_t shrink = 20; ///< checks spent shrinking each failing random case
  std::string kernels = "tensor-cores";
  gpu::KernelPath path() const { return gpu::path_named(kernels); }
  /// The policies the outputs are judged under (check.hpp, forward_policy, backward_policy).
  std::string policies() const {
    if (path() == gpu::KernelPath::cuda_cores)
      return policy_name(kernels_policy);
    return policy_name(gpu::Policy::tensor_core) +
           " (the tensor-core forward and backward of every rule)";
  }
};

gen::Need need_of(Kind k) {
  return k == Kind::varlen      ? gen::Need::varlen
         : k == Kind::causality ? gen::Need::causal
                                : gen::Need::any;
}

std::uint64_t hash_of(const std::string &s) {
  std::uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (unsigned char ch : s)
    h = (h ^ ch) * 1099511628211ULL;
  return h;
}

/// splitmix64, as verify seeds its cases.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Job {
  Kind kind;
  Case c;
  bool random = false;
  std::uint64_t rc_seed = 0; ///< the generator's seed (random cases)
  Result result;
  std::string error; ///< an exception from the kernels or the checks
  bool holds() const { return error.empty() && result.holds(); }
};

/// The fixed cases of one rule and storage type (gpu/check.hpp, fixed_checks).
std::vector<Job> fixed_jobs(gpu::KernelRule rule, gpu::DType t) {
  std::vector<Job> jobs;
  for (const auto &[K, V] : fixed_key_value_sizes)
    for (const FixedCheck &f : fixed_checks(rule, t, K, V))
      jobs.push_back({f.kind, f.c, false, 0, {}, {}});
  return jobs;
}

void run_job(Job &j) {
  try {
    j.result = run(j.kind, j.c);
  } catch (const std::exception &e) {
    j.error = e.what();
  }
}

/// Greedy shrinking through the generator's own shrinks (as verify shrinks): the first
/// smaller case that still fails, until none does or `budget` checks were spent. Called from
/// several threads at once: RapidCheck is reached through gen::ShrinkWalk only.
Job shrink(const Job &failing, std::size_t budget) {
  gen::ShrinkWalk walk(failing.c.rule, failing.c.storage, need_of(failing.kind), failing.rc_seed);
  Job best = failing;
  for (bool progress = true; progress && budget > 0;) {
    progress = false;
    while (std::optional<Case> next = walk.next()) {
      if (budget-- == 0)
        break;
      Job j{failing.kind, *next, true, failing.rc_seed, {}, {}};
      j.c.path = failing.c.path;
      run_job(j);
      if (!j.holds()) {
        best = j;
        walk.descend();
        progress = true;
        break;
      }
    }
  }
  return best;
}

/// Per output (rule, storage type, output): the worst relative errors seen.
struct OutputRow {
  std::size_t cases = 0, failures = 0;
  double kernel_rel = 0, twin_rel = 0, ratio = 0;
};

std::string number(double x) { return fmt::format("{:.3g}", x); }

/// The shape of an output whose layout is flash-linear-attention's, from its element count:
/// states [N, H, K, V], the rest [B, T, H, X]; empty for the stages.
std::vector<std::size_t> shape_of(const Case &c, const Verdict &v) {
  if (v.output == "final_state" || v.output == "dh0")
    return {c.sequences(), c.H, c.K, c.V};
  const std::size_t rows = c.B * c.T * c.H;
  const bool known = v.output == "o" || v.output == "dq" || v.output == "dk" || v.output == "dv" ||
                     v.output == "dg" || v.output == "dbeta";
  if (!known || rows == 0 || v.elements % rows != 0)
    return {};
  return {c.B, c.T, c.H, v.elements / rows};
}

/// The result format's entries: one per rule, type, check and output (every case's verdict on
/// that output; the worst case kept, failing ones first), one per rule, type and bitwise check
/// (causality, varlen), and an "error" entry where a check threw.
std::vector<reports::Result> results_of(const std::vector<Job> &jobs, const GpuCheckOptions &opt) {
  std::map<std::string, reports::Result> by_id;
  const auto add = [&](const Job &j, const std::string &output, bool holds, double ratio,
                       const Verdict *v) {
    const std::string rule(name_of(j.c.rule)), type = gpu::dtype_name(j.c.storage);
    const std::string id = rule + "/" + type + "/" + name_of(j.kind) + "/" + output;
    reports::Result &r = by_id[id];
    if (r.id.empty()) {
      r.id = id, r.kind = "kernel", r.rule = rule, r.scalar = type;
      r.property = name_of(j.kind), r.output = output;
      r.replay.command = fmt::format(
          "ruleproof gpu-check --rule {} --dtype {} --cases {} --seed {}{}", rule, type, opt.cases,
          opt.seed, opt.kernels == "tensor-cores" ? "" : " --kernels " + opt.kernels);
    }
    ++r.cases;
    const bool first_failure = !holds && r.failures++ == 0;
    const double shown = r.error_over_allowed.value_or(-1);
    if (!(first_failure || (holds == (r.failures == 0) && (ratio > shown || r.cases == 1))))
      return;
    r.verdict = r.failures ? reports::Verdict::fails : reports::Verdict::holds;
    r.replay.seed = j.random ? j.rc_seed : j.c.seed;
    r.replay.case_description = j.c.describe();
    r.details = {{"random_case", j.random}};
    if (!j.error.empty())
      r.details["error"] = j.error;
    else if (!holds && !v)
      r.details["result"] = j.result.summary();
    if (!v)
      return;
    r.worst_error = v->finite ? v->kernel_error : std::numeric_limits<double>::quiet_NaN();
    r.allowed_error = v->allowed;
    r.error_over_allowed = ratio;
    r.digits.reset();
    if (v->finite && v->kernel_error > 0 && v->truth_max > 0)
      r.digits = digits_agreed(v->kernel_error / v->truth_max);
    const std::vector<std::size_t> shape = shape_of(j.c, *v);
    r.where = reports::where_in(v->output,
                                shape.empty() ? std::vector<std::size_t>{}
                                              : reports::unravel(v->worst_index, shape),
                                v->summary());
    r.details["twin_error"] = v->twin_error;
    r.details["floor"] = v->floor;
    if (v->operand_floor > 0) // the scores' factors' roundings (check::operand_floor)
      r.details["operand_floor"] = v->operand_floor;
  };
  for (const Job &j : jobs) {
    for (const Verdict &v : j.result.verdicts)
      add(j, v.output, v.holds(), v.ratio(), &v);
    const bool any_failing_verdict = std::any_of(j.result.verdicts.begin(), j.result.verdicts.end(),
                                                 [](const Verdict &v) { return !v.holds(); });
    if (!j.error.empty())
      add(j, "error", false, std::numeric_limits<double>::infinity(), nullptr);
    else if (j.result.verdicts.empty() || (!j.holds() && !any_failing_verdict))
      add(j, "bitwise", j.holds(), j.holds() ? 0 : std::numeric_limits<double>::infinity(),
          nullptr);
  }
  std::vector<reports::Result> results;
  for (auto &[id, r] : by_id)
    results.push_back(std::move(r));
  return results;
}

int run_gpu_check(const GpuCheckOptions &opt, const std::string &command) {
  expect_report_writable(opt.out, opt.summary);
  const gpu::DeviceInfo device = gpu::query_device();
  fmt::print("GPU: {}\n", device.description);
  reports::Run run = reports::start_run("gpu-check");
  run.seed = opt.seed;
  run.machine.gpu = device.description;
  run.details = {{"random_cases_per_check", opt.cases},
                 {"twin_factor", twin_factor},
                 {"kernels", opt.kernels},
                 {"policy", opt.policies()}};
  const std::filesystem::path json_path(opt.out);
  std::filesystem::path md_path = json_path;
  md_path.replace_extension(".md");
  if (!device.available) {
    fmt::print("GPU checks skipped: no Hopper GPU ({})\n", device.description);
    run.skipped = "no Hopper GPU: " + device.description;
    write_report(run, opt.out, opt.summary);
    reports::write_file_atomically(md_path, "# ruleproof gpu-check\n\nCommand: `" + command +
                                                "`\n\nSkipped: no Hopper GPU (" +
                                                device.description + ").\n");
    fmt::print(stderr, "ruleproof gpu-check: wrote {} and {}\n", json_path.string(),
               md_path.string());
    return opt.require_gpu ? check_failed : ok;
  }

  std::vector<Job> jobs;
  for (const std::string &rule : opt.rules)
    for (const std::string &dt : opt.dtypes) {
      gpu::KernelRule kernel_rule = gpu::KernelRule::gla;
      for (gpu::KernelRule r : gpu::all_kernel_rules)
        if (name_of(r) == rule)
          kernel_rule = r;
      const gpu::DType t = dt == "fp16" ? gpu::DType::fp16 : gpu::DType::bf16;
      for (Job &j : fixed_jobs(kernel_rule, t))
        jobs.push_back(std::move(j));
      for (Kind k : all_kinds)
        for (std::size_t i = 0; i < opt.cases; ++i) {
          const std::uint64_t s = mix(opt.seed ^ mix(hash_of(rule + dt + name_of(k)) + i));
          jobs.push_back({k, gen::draw_case(kernel_rule, t, need_of(k), s), true, s, {}, {}});
        }
    }
  for (Job &j : jobs)
    j.c.path = opt.path();
  fmt::print("ruleproof gpu-check: {} checks ({} random a check, rule and type), seed {}, "
             "{} thread(s), {} kernels, twin factor {}, twin policy {}\n",
             jobs.size(), opt.cases, opt.seed, opt.threads, opt.kernels, twin_factor,
             opt.policies());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex print_lock;
  reports::Progress progress("ruleproof gpu-check: checks", jobs.size(),
                             reports::progress_wanted(stderr));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < std::min<std::size_t>(opt.threads, jobs.size()); ++w)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < jobs.size();) {
        run_job(jobs[i]);
        const std::size_t n = ++done;
        if (!jobs[i].holds()) {
          std::lock_guard<std::mutex> lock(print_lock);
          progress.finish();
          fmt::print("  [{}/{}] FAILS: {} {}\n", n, jobs.size(), name_of(jobs[i].kind),
                     jobs[i].c.describe());
        }
        progress.advance();
      }
    });
  for (std::thread &t : pool)
    t.join();
  progress.finish();

  // Shrink the first failing random case of each check kind, rule and type, in parallel.
  std::map<std::string, Job> shrunk;
  for (const Job &j : jobs)
    if (!j.holds() && j.random) {
      const std::string key = name_of(j.kind) + " " + std::string(name_of(j.c.rule)) + " " +
                              gpu::dtype_name(j.c.storage);
      if (!shrunk.count(key))
        shrunk.emplace(key, j);
    }
  if (!shrunk.empty() && opt.shrink > 0) {
    fmt::print("  shrinking {} failing case(s), at most {} checks each ...\n", shrunk.size(),
               opt.shrink);
    std::vector<Job *> to_shrink;
    for (auto &entry : shrunk)
      to_shrink.push_back(&entry.second);
    std::atomic<std::size_t> next_shrink{0};
    std::vector<std::thread> shrinkers;
    for (unsigned w = 0; w < std::min<std::size_t>(opt.threads, to_shrink.size()); ++w)
      shrinkers.emplace_back([&] {
        for (std::size_t i; (i = next_shrink++) < to_shrink.size();)
          *to_shrink[i] = shrink(*to_shrink[i], opt.shrink);
      });
    for (std::thread &t : shrinkers)
      t.join();
  }

  std::map<std::string, OutputRow> outputs; // "rule type output"
  std::map<std::string, OutputRow> checks;  // "rule type check"
  nlohmann::json failures = nlohmann::json::array();
  bool all_hold = true;
  for (const Job &j : jobs) {
    const std::string prefix =
        std::string(name_of(j.c.rule)) + " " + gpu::dtype_name(j.c.storage) + " ";
    OutputRow &row = checks[prefix + name_of(j.kind)];
    ++row.cases;
    if (!j.holds()) {
      ++row.failures;
      all_hold = false;
      failures.push_back({{"check", name_of(j.kind)},
                          {"case", j.c.describe()},
                          {"error", j.error},
                          {"result", j.error.empty() ? j.result.summary() : std::string()}});
    }
    for (const Verdict &v : j.result.verdicts) {
      OutputRow &o = outputs[prefix + v.output];
      ++o.cases;
      o.failures += v.holds() ? 0 : 1;
      if (v.truth_max > 0) {
        o.kernel_rel = std::max(o.kernel_rel, v.finite ? v.kernel_error / v.truth_max : INFINITY);
        o.twin_rel = std::max(o.twin_rel, v.twin_error / v.truth_max);
      }
      o.ratio = std::max(o.ratio, v.ratio());
    }
  }
  nlohmann::json shrunk_json = nlohmann::json::array();
  for (const auto &[key, j] : shrunk)
    shrunk_json.push_back({{"check", key},
                           {"smallest_case", j.c.describe()},
                           {"result", j.error.empty() ? j.result.summary() : j.error}});

  std::ostringstream md;
  md << "# ruleproof gpu-check\n\nCommand: `" << command << "`\n\nGPU: " << device.description
     << "\n\nEvery output judged against the float128 truth on the same stored input: it holds "
        "when finite (outputs are poisoned with NaN first) and its max error is at most "
     << twin_factor << " x max(twin error under the policy of the kernels that ran ("
     << opt.policies()
     << "), one rounding of the largest entry to the output's type after sqrt(n) fp32 "
        "roundings where each element sums n terms: the scores (A, A0, dplr_fla's A_qk, A_qa, "
        "A_ba, A_bk) over the K keys (gated_oja's A0 over the V values), dbeta over K + V + "
        "min(T, 64), dg over the rows; plus, for the scores under the tensor-core policy, the "
        "roundings of their 16-bit factors: the factors' unit roundoff times the largest root "
        "sum of squares of an entry's terms). Errors below are max |x - truth| / max |truth| "
        "over the cases.\n\n"
     << "| rule | type | output | judged | fail | kernel rel. error | twin rel. error | worst "
        "error / allowed |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto &[key, o] : outputs) {
    std::istringstream parts(key);
    std::string rule, type, output;
    parts >> rule >> type >> output;
    md << "| " << rule << " | " << type << " | " << output << " | " << o.cases << " | "
       << o.failures << " | " << number(o.kernel_rel) << " | " << number(o.twin_rel) << " | "
       << number(o.ratio) << " |\n";
  }
  md << "\n| rule | type | check | cases | fail |\n|---|---|---|---|---|\n";
  fmt::print("\n{:<16} {:<5} {:<10} {:>6} {:>5}\n", "rule", "type", "check", "cases", "fail");
  for (const auto &[key, row] : checks) {
    std::istringstream parts(key);
    std::string rule, type, check;
    parts >> rule >> type >> check;
    md << "| " << rule << " | " << type << " | " << check << " | " << row.cases << " | "
       << row.failures << " |\n";
    fmt::print("{:<16} {:<5} {:<10} {:>6} {:>5}\n", rule, type, check, row.cases, row.failures);
  }
  fmt::print("\n{:<16} {:<5} {:<12} {:>7} {:>5} {:>11} {:>11} {:>9}\n", "rule", "type", "output",
             "judged", "fail", "kernel_rel", "twin_rel", "ratio");
  for (const auto &[key, o] : outputs) {
    std::istringstream parts(key);
    std::string rule, type, output;
    parts >> rule >> type >> output;
    fmt::print("{:<16} {:<5} {:<12} {:>7} {:>5} {:>11} {:>11} {:>9}\n", rule, type, output, o.cases,
               o.failures, number(o.kernel_rel), number(o.twin_rel), number(o.ratio));
  }
  if (!failures.empty()) {
    md << "\n## Failures\n\n";
    for (const auto &f : failures)
      md << "- " << f["check"].get<std::string>() << " on `" << f["case"].get<std::string>()
         << "`: " << (f["error"].get<std::string>().empty() ? "" : f["error"].get<std::string>())
         << "\n\n```\n"
         << f["result"].get<std::string>() << "```\n";
    for (const auto &s : shrunk_json)
      md << "- smallest failing case found for " << s["check"].get<std::string>() << ": `"
         << s["smallest_case"].get<std::string>() << "`\n";
  }
  run.results = results_of(jobs, opt);
  run.details["shrunk"] = shrunk_json;
  write_report(run, opt.out, opt.summary);
  reports::write_file_atomically(md_path, md.str());
  fmt::print(stderr, "ruleproof gpu-check: wrote {} and {}\n", json_path.string(),
             md_path.string());
  fmt::print("{}\n", all_hold ? "every GPU check holds" : "a GPU check FAILS");
  return all_hold ? ok : check_failed;
}

} // namespace

void add_gpu_check_command(CLI::App &app, int &status) {
  auto opt = std::make_shared<GpuCheckOptions>();
  CLI::App *sub = app.add_subcommand(
      "gpu-check", "check the GPU kernels against the truth and their emulated twin (exit 0: all "
                   "hold; no GPU: skipped, exit 0 unless --require-gpu)");
  sub->add_option("--rule", opt->rules,
                  "rule (repeatable): simple_gla, gla, gated_delta_rule, kda, dplr_fla, gated_oja")
      ->check(
          CLI::IsMember({"simple_gla", "gla", "gated_delta_rule", "kda", "dplr_fla", "gated_oja"}))
      ->capture_default_str();
  sub->add_option("--dtype", opt->dtypes, "input type (repeatable): bf16, fp16")
      ->check(CLI::IsMember({"bf16", "fp16"}))
      ->capture_default_str();
  sub->add_option("--cases", opt->cases, "random cases per check, rule and type")
      ->capture_default_str();
  sub->add_option("--seed", opt->seed, "seed of the random cases; the same seed replays them")
      ->capture_default_str();
  sub->add_option("--out", opt->out, "JSON report path (the Markdown report goes beside it)")
      ->capture_default_str();
  sub->add_option("--threads", opt->threads, "worker threads")->check(at_least_one);
  sub->add_option("--shrink", opt->shrink, "checks spent shrinking each failing random case")
      ->capture_default_str();
  sub->add_option("--kernels", opt->kernels,
                  "which kernels run: tensor-cores (the tensor-core forward and backward of gla, "
                  "simple_gla, gated_delta_rule, kda, dplr_fla and gated_oja, judged under the "
                  "tensor-core policy) or cuda-cores (the earlier kernels, every product fp32 on "
                  "CUDA cores, judged under the fp32 policy)")
      ->check(CLI::IsMember({gpu::path_name(gpu::KernelPath::cuda_cores),
                             gpu::path_name(gpu::KernelPath::tensor_cores)}))
      ->capture_default_str();
  sub->add_flag("--require-gpu", opt->require_gpu, "exit 1 when no Hopper GPU is found");
  add_summary_option(sub, opt->summary);
  sub->callback([opt, &status] {
    std::string command = "ruleproof gpu-check";
    for (const std::string &r : opt->rules)
      command += " --rule " + r;
    for (const std::string &d : opt->dtypes)
      command += " --dtype " + d;
    command += " --cases " + std::to_string(opt->cases) + " --seed " + std::to_string(opt->seed) +
               " --threads " + std::to_string(opt->threads) + " --shrink " +
               std::to_string(opt->shrink) + " --out " + opt->out;
    if (opt->kernels != "tensor-cores")
      command += " --kernels " + opt->kernels;
    if (opt->require_gpu)
      command += " --require-gpu";
    status = run_gpu_check(*opt, command);
  });
}

} // namespace ruleproof::cli
