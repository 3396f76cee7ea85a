// ruleproof run: computes one rule's outputs (and, with --backward, its gradients) in the
// chosen form and scalar from a JSON input file, and writes them as JSON.
#include "run.hpp"

#include <fmt/core.h>

#include "exit_codes.hpp"
#include "input_file.hpp"
#include "option_checks.hpp"
#include "reference/core/float128.hpp"
#include "reference/core/gradients.hpp"
#include "reference/truth/truth.hpp"
#include "reporting/atomic_write.hpp"

namespace ruleproof::cli {
namespace {

// The double-only build (RULEPROOF_DOUBLE_ONLY, the sanitizer build) computes in double alone.
#ifdef RULEPROOF_DOUBLE_ONLY
constexpr const char *default_scalar = "double";
#else
constexpr const char *default_scalar = "float128";
#endif

struct RunArgs {
  std::string rule, form = "chunk", scalar = default_scalar, input, out;
  bool backward = false;
};

/// The form called `name` (--form admits the names of all_forms alone).
Form form_called(const std::string &name) {
  for (Form f : all_forms)
    if (name_of(f) == name)
      return f;
  throw InputError("--form", "unknown form '" + name + "'");
}

template <class Rule, Scalar S> nlohmann::json run_rule(const RunArgs &args) {
  const InputFile<S> file = read_input_file<S>(args.input);
  if (Rule::signature().has_ab)
    for (const auto &[name, x] : {std::pair{"a", &file.in.a}, std::pair{"b", &file.in.b}})
      if (x->empty())
        throw InputError(name, "missing from " + args.input + " (" + Rule::name() +
                                   " takes the low-rank pair a, b, [B, T, H, K] each)");
  nlohmann::json result = {
      {"rule", Rule::name()}, {"form", args.form}, {"scalar", scalar_traits<S>::name()}};
  if (args.backward) {
    if (file.ct.d_o.empty())
      throw InputError("do", "missing from " + args.input + " (needed by --backward)");
    const Grads<S> d = Rule::chunk_backward(file.in, file.ct, file.opts);
    result["form"] = "chunk_backward";
    for (const auto &f : grad_fields<S>())
      if (!(d.*f.grad).empty())
        result[std::string("d") + f.name] = json_of(d.*f.grad);
    return result;
  }
  Output<S> out;
  switch (form_called(args.form)) {
  case Form::recurrent: out = Rule::recurrent(file.in, file.opts); break;
  case Form::parallel: out = Rule::parallel(file.in, file.opts); break;
  case Form::chunk: out = Rule::chunk(file.in, file.opts); break;
  }
  result["o"] = json_of(out.o);
  result["final_state"] = json_of(out.final_state);
  return result;
}

template <class Rule> nlohmann::json run_in_scalar(const RunArgs &args) {
  if (args.scalar == "double")
    return run_rule<Rule, double>(args);
#ifdef RULEPROOF_DOUBLE_ONLY
  throw InputError("--scalar", "this build computes in double alone (RULEPROOF_DOUBLE_ONLY, "
                               "the sanitizer build), not in " +
                                   args.scalar);
#else
  return run_rule<Rule, float128>(args);
#endif
}

int run(const RunArgs &args) {
  if (!args.out.empty())
    expect_writable("--out", args.out);
  nlohmann::json result;
  bool found = false;
  rules::for_each_rule([&](auto rule) {
    using Rule = decltype(rule);
    if (Rule::name() == args.rule) {
      found = true;
      result = run_in_scalar<Rule>(args);
    }
  });
  if (!found)
    throw InputError("--rule", "unknown rule '" + args.rule + "'");
  const std::string text = result.dump(1);
  if (args.out.empty())
    fmt::print("{}\n", text);
  else
    reports::write_file_atomically(args.out, text + "\n");
  return ok;
}

} // namespace

void add_run_command(CLI::App &app, int &status) {
  auto args = std::make_shared<RunArgs>();
  std::vector<std::string> rule_names;
  rules::for_each_rule([&](auto rule) { rule_names.push_back(decltype(rule)::name()); });
  CLI::App *cmd = app.add_subcommand(
      "run", "Compute one rule's outputs (or gradients) on the tensors of a JSON file");
  cmd->add_option("--rule", args->rule, "Rule name")->required()->check(CLI::IsMember(rule_names));
  std::vector<std::string> form_names;
  for (Form f : all_forms)
    form_names.emplace_back(name_of(f));
  cmd->add_option("--form", args->form, "recurrent, parallel or chunk")
      ->check(CLI::IsMember(form_names))
      ->capture_default_str();
  cmd->add_flag("--backward", args->backward,
                "Chunkwise analytic backward of <do, o> + <dht, final_state> instead");
  cmd->add_option("--scalar", args->scalar, "double or float128")
      ->check(CLI::IsMember({"double", "float128"}))
      ->capture_default_str();
  cmd->add_option("--input", args->input,
                  "JSON file: q, k, v, g, beta, initial_state, a, b, do, dht as "
                  "{\"shape\": [...], \"data\": [...]}, and \"options\"")
      ->required();
  cmd->add_option("--out", args->out, "Write the result here (default: standard output)");
  cmd->callback([args, &status] { status = run(*args); });
}

} // namespace ruleproof::cli
