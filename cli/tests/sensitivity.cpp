// ruleproof: how small a fault check-dump's verdict catches, on flash-linear-attention's own
// kernels (data/flash-linear-attention/correct/): for every dump and output, the smallest
// relative perturbation e such that the output scaled by 1 + e (rounded to the type the kernel
// stores it in) fails its verdict under the tensor-core policy, found by bisection, beside the
// kernel's own error (its worst error over the largest entry of the truth). Writes the table of
// each rule, output and input type, the worst of its dumps, as Markdown:
//
//   build/cli/dump_sensitivity [--out reports/sensitivity.md]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "fla_corpus.hpp"

using namespace ruleproof;
using namespace ruleproof::cli;

namespace {

/// The tensor of output `name` in a dump's outputs.
Tensor<float> &output_tensor(KernelDump<float> &d, const std::string &name) {
  if (name == "o")
    return d.out.o;
  if (name == "final_state")
    return d.out.final_state;
  Grads<float> &g = d.grads;
  return name == "dq"      ? g.dq
         : name == "dk"    ? g.dk
         : name == "dv"    ? g.dv
         : name == "dbeta" ? g.dbeta
         : name == "da"    ? g.da
         : name == "db"    ? g.db
         : name == "dh0"   ? g.dh0
                           : g.dg;
}

/// The verdict on output `name` of a dump.
gpu::check::Verdict verdict_on(const corpus::Entry &e, const KernelDump<float> &d,
                               const DumpReference &ref, const std::string &name) {
  for (const gpu::check::Verdict &v : judge_dump(e.rule, d, ref))
    if (v.output == name)
      return v;
  throw std::logic_error("no verdict on " + name);
}

/// The smallest e in (0, 1] whose scaling 1 + e of output `name` fails, to 1/1000 of itself.
double smallest_caught(const corpus::Entry &e, const DumpReference &ref, const std::string &name) {
  const gpu::DType t = corpus::type_of(e.dump, name);
  const auto fails = [&](double eps) {
    KernelDump<float> d = e.dump;
    Tensor<float> &x = output_tensor(d, name);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = gpu::round_to(t, static_cast<float>(x[i] * (1 + eps)));
    return !verdict_on(e, d, ref, name).holds();
  };
  double lo = 0, hi = 1;
  if (!fails(hi))
    return hi;
  while (hi - lo > 1e-3 * hi) {
    const double mid = (lo + hi) / 2;
    (fails(mid) ? hi : lo) = mid;
  }
  return hi;
}

struct Row {
  double caught = 0, own = 0, ratio = 0;
  std::string worst; ///< the dump of the largest ratio
  int dumps = 0;
};

} // namespace

int main(int argc, char **argv) {
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--out")
      out = argv[i + 1];
  std::map<std::tuple<std::string, std::string, std::string>, Row> rows; // rule, output, type
  for (const corpus::Entry &e : corpus::read_folder(corpus::data_folder() / "correct")) {
    const DumpReference ref = dump_reference(e.rule, gpu::Policy::tensor_core, e.dump);
    for (const gpu::check::Verdict &v : judge_dump(e.rule, e.dump, ref)) {
      const double own = v.truth_max > 0 ? v.kernel_error / v.truth_max : 0;
      const double caught = smallest_caught(e, ref, v.output);
      Row &r = rows[{std::string(name_of(e.rule)), v.output, io::to_string(e.dump.storage)}];
      r.caught = std::max(r.caught, caught);
      r.own = std::max(r.own, own);
      if (own > 0 && caught / own > r.ratio)
        r.ratio = caught / own, r.worst = e.name;
      ++r.dumps;
      std::fprintf(stderr, "%s %s: caught at %.3g, own error %.3g\n", e.name.c_str(),
                   v.output.c_str(), caught, own);
    }
  }
  std::ostringstream md;
  md << "# How small a fault check-dump catches, on flash-linear-attention's kernels\n\n"
     << "For every dump of `data/flash-linear-attention/correct/` and every output it holds, "
        "the smallest relative perturbation e such that the output scaled by 1 + e (rounded "
        "to the type the kernel stores it in) fails its verdict under the `tensor-core` policy, "
        "found by bisection to a thousandth of itself; beside it the kernel's own error, its "
        "worst error over the largest entry of the float128 truth. Each row is the worst of "
        "the dumps of that rule and input type: the largest e caught, the largest own error, "
        "and the largest ratio of the two on one dump (with that dump). Made by "
        "`build/cli/dump_sensitivity --out reports/sensitivity.md`.\n\n"
     << "| rule | output | inputs | dumps | caught at e = | kernel's own error | e / own error "
        "(worst dump) |\n|---|---|---|---|---|---|---|\n";
  for (const auto &[key, r] : rows) {
    const auto &[rule, output, type] = key;
    char line[400];
    std::snprintf(line, sizeof line, "| %s | %s | %s | %d | %.3g | %.3g | %.2f (%s) |\n",
                  rule.c_str(), output.c_str(), type.c_str(), r.dumps, r.caught, r.own, r.ratio,
                  r.worst.c_str());
    md << line;
  }
  if (out.empty())
    std::fputs(md.str().c_str(), stdout);
  else
    std::ofstream(out) << md.str();
  return 0;
}
