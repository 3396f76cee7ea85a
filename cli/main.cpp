// ruleproof: the command-line front end.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

int main(int argc, char **argv) {
  CLI::App app{"ruleproof: checks the mathematics and the kernels of linear attention"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
