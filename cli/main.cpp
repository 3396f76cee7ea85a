// ruleproof: the command-line front end. Every command reports bad input with exit code 2
// and a message naming the tensor or option and the problem (exit_codes.hpp).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "check_dump.hpp"
#include "claims.hpp"
#include "exit_codes.hpp"
#include "gate.hpp"
#include "gpu_check.hpp"
#include "html.hpp"
#include "reference/core/inputs.hpp"
#include "reporting/result.hpp"
#include "run.hpp"
#include "verify.hpp"

int main(int argc, char **argv) {
  using namespace ruleproof::cli;
  CLI::App app{"ruleproof: checks the mathematics and the kernels of linear attention.\n"
               "Exit codes: 0 all holds, 1 a check failed, 2 bad input, 3 internal error, "
               "4 gate: a regression against the baseline."};
  app.require_subcommand(1);
  int status = ok;
  ruleproof::reports::set_invocation(argc, argv);
  add_run_command(app, status);
  add_verify_command(app, status);
  add_gpu_check_command(app, status);
  add_claims_command(app, status);
  add_check_dump_command(app, status);
  add_rules_command(app, status);
  add_gate_command(app, status);
  add_merge_command(app, status);
  add_html_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
    return bad_input;
  } catch (const ruleproof::InputError &e) {
    fmt::print(stderr, "ruleproof: bad input: {}\n", e.what());
    return bad_input;
  } catch (const ruleproof::reports::ReportError &e) {
    fmt::print(stderr, "ruleproof: bad input: {}\n", e.what());
    return bad_input;
  } catch (const std::exception &e) {
    fmt::print(stderr, "ruleproof: internal error: {}\n", e.what());
    return internal_error;
  }
  return status;
}
