// ruleproof check-dump on flash-linear-attention's own kernels (data/flash-linear-attention/):
// under the tensor-core policy every correct dump holds, every dump of a real bug and every fault
// planted in a correct dump fails; under the fp32 policy (a twin of fp32 arithmetic, this
// project's own kernels') the correct dumps fail, which is what the tensor-core policy is for.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "fla_corpus.hpp"

using namespace ruleproof;
using namespace ruleproof::cli;

namespace {

bool all_hold(const std::vector<gpu::check::Verdict> &verdicts) {
  for (const gpu::check::Verdict &v : verdicts)
    if (!v.holds())
      return false;
  return true;
}

std::string table(const std::vector<gpu::check::Verdict> &verdicts) {
  std::string s;
  for (const gpu::check::Verdict &v : verdicts)
    s += "  " + v.summary() + "\n";
  return s;
}

/// The worst ratio of error to allowed error among the verdicts.
double worst_ratio(const std::vector<gpu::check::Verdict> &verdicts) {
  double r = 0;
  for (const gpu::check::Verdict &v : verdicts)
    r = std::max(r, v.ratio());
  return r;
}

/// Whether a fault moves some output of the dump by more than the allowed error of that
/// output's verdict on the correct dump (or makes it not finite): a fault that moves none cannot
/// be told from rounding, since a kernel's correct outputs may err by as much.
bool visible(const KernelDump<float> &good, const KernelDump<float> &faulty,
             const std::vector<gpu::check::Verdict> &verdicts) {
  const auto moved = [](const Tensor<float> &a, const Tensor<float> &b) {
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(b[i]))
        return std::numeric_limits<double>::infinity();
      m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    }
    return m;
  };
  const std::pair<const Tensor<float> *, const Tensor<float> *> outputs[] = {
      {&good.out.o, &faulty.out.o},
      {&good.out.final_state, &faulty.out.final_state},
      {&good.grads.dq, &faulty.grads.dq},
      {&good.grads.dk, &faulty.grads.dk},
      {&good.grads.dv, &faulty.grads.dv},
      {&good.grads.dg, &faulty.grads.dg},
      {&good.grads.dbeta, &faulty.grads.dbeta},
      {&good.grads.da, &faulty.grads.da},
      {&good.grads.db, &faulty.grads.db},
      {&good.grads.dh0, &faulty.grads.dh0}};
  const char *names[] = {"o", "final_state", "dq", "dk", "dv", "dg", "dbeta", "da", "db", "dh0"};
  for (std::size_t i = 0; i < std::size(outputs); ++i) {
    const double m = moved(*outputs[i].first, *outputs[i].second);
    for (const gpu::check::Verdict &v : verdicts)
      if ((v.output == names[i] || (i == 5 && v.output.rfind("dg", 0) == 0)) && m > v.allowed)
        return true;
  }
  return false;
}

} // namespace

TEST_CASE("flash_linear_attention_correct_dumps_hold_and_planted_faults_fail", "[dumps]") {
  const auto entries = corpus::read_folder(corpus::data_folder() / "correct");
  REQUIRE(entries.size() >= 30);
  std::string missed, unseen; // visible faults that held; faults too small to be seen
  std::size_t visible_faults = 0, invisible_faults = 0;
  for (const corpus::Entry &e : entries) {
    const DumpReference ref = dump_reference(e.rule, gpu::Policy::tensor_core, e.dump);
    const auto verdicts = judge_dump(e.rule, e.dump, ref);
    INFO(e.name << " under tensor-core:\n" << table(verdicts));
    CHECK(all_hold(verdicts));
    for (const corpus::Planted &p : corpus::planted_faults(e.rule, e.dump)) {
      const auto faulty = judge_dump(e.rule, p.dump, ref);
      const bool seen = visible(e.dump, p.dump, verdicts);
      ++(seen ? visible_faults : invisible_faults);
      if (all_hold(faulty) && seen)
        missed += e.name + ", " + p.fault + ": holds, worst ratio " +
                  std::to_string(worst_ratio(faulty)) + "\n";
      if (!seen)
        unseen += e.name + ", " + p.fault + (all_hold(faulty) ? ": holds\n" : ": fails\n");
    }
  }
  WARN(visible_faults << " faults planted that move an output by more than its allowed error, "
                      << invisible_faults << " that move none so far (the fault cannot be told "
                      << "from rounding here):\n"
                      << unseen);
  INFO("visible faults that held:\n" << missed);
  CHECK(missed.empty());
}

TEST_CASE("flash_linear_attention_bad_dumps_fail", "[dumps]") {
  const auto entries = corpus::read_folder(corpus::data_folder() / "bad");
  REQUIRE(entries.size() >= 2);
  for (const corpus::Entry &e : entries) {
    const auto verdicts = judge_dump(e.rule, gpu::Policy::tensor_core, e.dump);
    INFO(e.name << ":\n" << table(verdicts));
    CHECK_FALSE(all_hold(verdicts));
  }
}

TEST_CASE("the_fp32_twin_fails_correct_tensor_core_kernels", "[dumps]") {
  // The twin of fp32 arithmetic allows far less than a tensor-core kernel's roundings: every
  // correct dump fails under it (the final state, dg, dbeta and dh0 at hundreds of times their
  // allowance).
  for (const corpus::Entry &e : corpus::read_folder(corpus::data_folder() / "correct")) {
    const auto verdicts = judge_dump(e.rule, gpu::Policy::fp32, e.dump);
    INFO(e.name << " under fp32:\n" << table(verdicts));
    CHECK_FALSE(all_hold(verdicts));
  }
}
