// The claims engine tested: a true identity never fails, a planted false one (a dropped
// term, a transposed factor, a wrong index range) is caught and shrunk, the degree and the
// Schwartz-Zippel bound are computed right, MPFR decides what is not rational, a
// correction that does not hold is rejected, and the registry's quotes are verbatim.
#include <filesystem>

#include <catch2/catch.hpp>

#include "proofs/claims/claims.hpp"
#include "proofs/claims/common.hpp"
#include "proofs/coverage.hpp"
#include "proofs/engine.hpp"
#include "proofs/report.hpp"
#include "reference/gla/gla.hpp"

using namespace ruleproof;
using namespace ruleproof::proofs;

namespace {

const EngineOptions options{7, 4, 40};

Claim test_claim(const std::string &id, Check check, Sizes sizes = {}) {
  Claim c = claim(id, {"test.txt", "test", ""}, "a quote of twenty characters or more",
                  "test statement", std::move(check));
  c.sizes = sizes;
  return c;
}

/// GLA's recurrent form against its chunkwise form at chunk size C: a true identity.
Check gla_chunk_vs_recurrent() {
  return check_of([](auto &d) {
    using S = scalar_of<decltype(d)>;
    const Head<S> x = notes::draw_head(d, d.sizes.K, false, true);
    const auto r = gla::recurrent_head(x, S(1));
    const auto c = gla::chunk_head(x, S(1), d.sizes.C);
    return Sides<S>{stack<S>({r.o, r.ht}), stack<S>({c.o, c.ht})};
  });
}

/// o_t = q_t S_t with S_t = sum_{i in [first, t]} k_i^T v_i, against the recurrence: true
/// for first = 0, wrong (a wrong index range) for first = 1, which needs T >= 2 to show.
Check sum_from(Eigen::Index first) {
  return check_of([first](auto &d) {
    using S = scalar_of<decltype(d)>;
    Head<S> x = notes::draw_head(d, d.sizes.K);
    x.g.setZero();
    Mat<S> o = Mat<S>::Zero(x.q.rows(), x.v.cols());
    for (Eigen::Index t = 0; t < x.q.rows(); ++t)
      for (Eigen::Index i = first; i <= t; ++i)
        o.row(t) += x.q.row(t).dot(x.k.row(i)) * x.v.row(i);
    return Sides<S>{o, gla::recurrent_head(x, S(1)).o};
  });
}

} // namespace

TEST_CASE("claims_engine_true_identities_hold_exactly") {
  const Claim c = test_claim("true.gla_chunk", gla_chunk_vs_recurrent(), {7, 3, 2, 3});
  const ClaimResult r = decide(c, options);
  REQUIRE(r.verdict == Verdict::holds);
  CHECK(r.readings[0].method == "exact rational");
  CHECK(r.readings[0].degree > 0);
  CHECK(r.readings[0].failure_bound < 1e-6);
  CHECK(decide(test_claim("true.sum", sum_from(0)), options).verdict == Verdict::holds);
}

TEST_CASE("claims_engine_catches_and_shrinks_a_wrong_index_range") {
  const ClaimResult r = decide(test_claim("false.range", sum_from(1), {6, 3, 3, 3}), options);
  REQUIRE(r.verdict == Verdict::fails);
  const Counterexample &c = *r.readings[0].counterexample;
  CHECK(c.sizes == Sizes{1, 1, 1, 1}); // t = 1 already misses k_1^T v_1
  CHECK(c.error > 0);
}

TEST_CASE("claims_engine_catches_a_dropped_term_and_a_transposed_factor") {
  const Check dropped = check_of([](auto &d) { // (a + b)^2 = a^2 + b^2: 2ab dropped
    using S = scalar_of<decltype(d)>;
    const Mat<S> a = d.values(d.sizes.K, d.sizes.K), b = d.values(d.sizes.K, d.sizes.K);
    return Sides<S>{Mat<S>((a + b).cwiseProduct(a + b)),
                    Mat<S>(a.cwiseProduct(a) + b.cwiseProduct(b))};
  });
  const Check transposed = check_of([](auto &d) { // (AB)^T = A^T B^T: B^T A^T is right
    using S = scalar_of<decltype(d)>;
    const Mat<S> A = d.values(d.sizes.K, d.sizes.K), B = d.values(d.sizes.K, d.sizes.K);
    return Sides<S>{Mat<S>((A * B).transpose()), Mat<S>(A.transpose() * B.transpose())};
  });
  const ClaimResult r1 = decide(test_claim("false.dropped", dropped, {1, 4, 1, 1}), options);
  REQUIRE(r1.verdict == Verdict::fails);
  CHECK(r1.readings[0].counterexample->sizes.K == 1);
  const ClaimResult r2 = decide(test_claim("false.transposed", transposed, {1, 4, 1, 1}), options);
  REQUIRE(r2.verdict == Verdict::fails);
  CHECK(r2.readings[0].counterexample->sizes.K == 2); // scalars commute: K = 1 holds
}

TEST_CASE("claims_engine_tracks_degrees_and_the_schwartz_zippel_bound") {
  symbol_table().clear();
  const Exact x = Exact::variable(3), y = Exact::variable(5), z = Exact::variable(7);
  CHECK((x * y + z).degree() == Degree{2, 0});
  CHECK((x / y).degree() == Degree{1, 1});
  CHECK((x / y + z).degree() == Degree{2, 1}); // (x + z y) / y
  CHECK((Exact(2) * x + Exact()).degree() == Degree{1, 0});
  const Exact l1 = Exact::log_gate(Rational(1, 2)), l2 = Exact::log_gate(Rational(1, 3));
  const Exact e = exp(l1 + l1 - l2); // alpha_1^2 / alpha_2
  CHECK(e.rational() == Rational(3, 4));
  CHECK(e.degree() == Degree{2, 1});
  CHECK_THROWS_AS(exp(l1 + Exact(1)), NotExact); // e is not rational
  CHECK_THROWS_AS(l1 * l2, NotExact);
  CHECK_THROWS_AS(exp(l1 * x), NotExact);        // a coefficient that is a variable
  const Exact th = Exact::angle(Rational(1, 2)); // cos = 3/5, sin = 4/5
  CHECK(cos(th + th).rational() == Rational(-7, 25));
  CHECK(sin(th + th).rational() == Rational(24, 25));
  CHECK(schwartz_zippel_bound(3, 100, 2) == Approx(9e-4));
  CHECK(schwartz_zippel_bound(200, 100, 5) == 1.0);
  const ClaimResult r = decide(test_claim("true.gla_chunk", gla_chunk_vs_recurrent()), options);
  const ReadingResult &x1 = r.readings[0];
  CHECK(x1.failure_bound == Approx(schwartz_zippel_bound(x1.degree, x1.set_size, options.points)));
}

TEST_CASE("claims_engine_uses_mpfr_where_exact_arithmetic_ends") {
  const auto sqrt_claim = [](bool correct) {
    return check_of([correct](auto &d) { // sqrt(a^2 b^2) = |a b| (or, wrongly, a b)
      using S = scalar_of<decltype(d)>;
      using std::abs;
      using std::sqrt;
      const Mat<S> a = d.values(1, d.sizes.K), b = d.values(1, d.sizes.K);
      Mat<S> lhs(1, a.cols()), rhs(1, a.cols());
      for (Eigen::Index i = 0; i < a.cols(); ++i) {
        lhs(0, i) = sqrt(S(a(0, i) * a(0, i) * b(0, i) * b(0, i) + S(1)));
        const S ab = correct ? S(abs(S(a(0, i) * b(0, i)))) : S(a(0, i) * b(0, i));
        rhs(0, i) = sqrt(S(ab * ab + S(1)));
      }
      if (!correct)
        lhs = lhs.array() - S(1) / S(1000000);
      return Sides<S>{lhs, rhs};
    });
  };
  const ClaimResult good = decide(test_claim("true.sqrt", sqrt_claim(true)), options);
  REQUIRE(good.verdict == Verdict::holds);
  CHECK(good.readings[0].method.rfind("mpfr", 0) == 0);
  CHECK(good.readings[0].why_not_exact.find("square root") != std::string::npos);
  const ClaimResult bad = decide(test_claim("false.sqrt", sqrt_claim(false)), options);
  REQUIRE(bad.verdict == Verdict::fails);
  CHECK(bad.readings[0].counterexample->sizes.K == 1);
}

TEST_CASE("claims_engine_decides_mpfr_claims_alike_on_any_number_of_threads") {
  // exp(a + b) = exp(a) exp(b) on a long row: the sides agree to 2D digits only if each
  // evaluation keeps its own precision while other threads evaluate at another.
  const Check exp_of_sum = check_of([](auto &d) {
    using S = scalar_of<decltype(d)>;
    using std::exp;
    const Mat<S> a = d.values(1, 400), b = d.values(1, 400);
    Mat<S> lhs(1, a.cols()), rhs(1, a.cols());
    for (Eigen::Index i = 0; i < a.cols(); ++i) {
      lhs(0, i) = exp(S(a(0, i) + b(0, i)));
      rhs(0, i) = exp(a(0, i)) * exp(b(0, i));
    }
    return Sides<S>{lhs, rhs};
  });
  std::vector<Claim> copies;
  for (int i = 0; i < 64; ++i)
    copies.push_back(test_claim("exp.sum." + std::to_string(i), exp_of_sum));
  std::vector<const Claim *> claims;
  for (const Claim &c : copies)
    claims.push_back(&c);
  for (const ClaimResult &r : decide_all(claims, options, 4, {}))
    CHECK(r.verdict == Verdict::holds);
}

TEST_CASE("claims_engine_rejects_a_correction_that_does_not_hold_and_reports_readings") {
  Claim wrong = test_claim("fix.wrong", sum_from(1));
  wrong.correction_of = "false.range";
  const ClaimResult r = decide(wrong, options);
  CHECK(r.verdict == Verdict::fails);
  CHECK_FALSE(r.problem.empty());
  Claim right = test_claim("fix.right", sum_from(0));
  right.correction_of = "false.range";
  CHECK(decide(right, options).problem.empty());
  Claim two = test_claim("two.readings", sum_from(0));
  two.readings.push_back({"from 1", "", sum_from(1)});
  const ClaimResult a = decide(two, options);
  CHECK(a.verdict == Verdict::ambiguous);
  REQUIRE(a.readings.size() == 2);
  CHECK(a.readings[0].verdict == Verdict::holds);
  CHECK(a.readings[1].verdict == Verdict::fails);
}

TEST_CASE("a_claims_verdict_follows_its_readings_and_is_ambiguous_only_where_they_disagree") {
  const auto with_readings = [](const std::string &id, std::vector<int> firsts) {
    Claim c = claim(id, {"note.txt", "section", ""}, "a quote of twenty characters or more",
                    "o_t = q_t sum_{i <= t} k_i^T v_i, its first index read several ways");
    for (int first : firsts)
      c.readings.push_back({"from " + std::to_string(first), "", sum_from(first)});
    return decide(c, options);
  };
  const ClaimResult every_fails = with_readings("all.fail", {1, 2});
  CHECK(every_fails.verdict == Verdict::fails);
  CHECK(readings_summary(every_fails).empty());
  const ClaimResult every_holds = with_readings("all.hold", {0, 0});
  CHECK(every_holds.verdict == Verdict::holds);
  const ClaimResult disagree = with_readings("disagree", {1, 0, 2});
  CHECK(disagree.verdict == Verdict::ambiguous);
  CHECK(readings_summary(disagree) == "holds read as \"from 0\"; fails read as \"from 1\", "
                                      "\"from 2\"");
  CHECK(shown_reading(disagree)->name == "from 1");
}

TEST_CASE("claims_engine_replays_a_seed") {
  const Claim c = test_claim("false.range", sum_from(1), {6, 3, 3, 3});
  const ClaimResult a = decide(c, options), b = decide(c, options);
  CHECK(a.readings[0].counterexample->seed == b.readings[0].counterexample->seed);
  CHECK(a.readings[0].max_rel_error == b.readings[0].max_rel_error);
}

TEST_CASE("claims_registry_problems_are_found") {
  Claim shortq = test_claim("short.quote", sum_from(0));
  shortq.quote = "too short";
  Claim orphan = test_claim("orphan.fix", sum_from(0));
  orphan.correction_of = "no.such.claim";
  const std::vector<Claim> all{shortq, orphan, orphan};
  const std::vector<const Claim *> chosen{&all[0], &all[1]};
  const auto problems = registry_problems(chosen, all, "", false);
  CHECK(problems.size() == 3); // the quote's length, the orphan correction, the twice-used id
}

TEST_CASE("claims_quotes_are_verbatim_in_the_seed_notes", "[quotes]") {
  const std::vector<Claim> all = notes::all_claims();
  std::vector<const Claim *> chosen;
  for (const Claim &c : all)
    chosen.push_back(&c);
  if (!std::filesystem::is_directory(RULEPROOF_SEEDS_DIR)) {
    std::puts("seed notes not found at " RULEPROOF_SEEDS_DIR ": quotes not checked");
    return;
  }
  const auto problems = registry_problems(chosen, all, RULEPROOF_SEEDS_DIR, true);
  for (const std::string &p : problems)
    UNSCOPED_INFO(p);
  CHECK(problems.empty());
}

TEST_CASE("every_displayed_equation_of_the_notes_is_covered_by_a_claim_or_given_a_reason",
          "[quotes]") {
  if (!std::filesystem::is_directory(RULEPROOF_SEEDS_DIR)) {
    std::puts("seed notes not found at " RULEPROOF_SEEDS_DIR ": coverage not checked");
    return;
  }
  const std::vector<Claim> all = notes::all_claims();
  std::vector<const Claim *> claims;
  for (const Claim &c : all)
    claims.push_back(&c);
  const auto notes = coverage_of_notes(claims, notes::no_claim_needed(), RULEPROOF_SEEDS_DIR);
  CHECK(notes.size() == 5);
  const auto problems = coverage_problems(notes);
  for (const std::string &p : problems)
    UNSCOPED_INFO(p);
  CHECK(problems.empty());
}

TEST_CASE("coverage_finds_every_displayed_equation_and_the_ones_neither_covered_nor_reasoned") {
  // Three displays: a derivation of two steps (the "&+" line continues the first), two
  // equations side by side, and a list of two definitions.
  const std::string note =
      "Intro $x$ prose.\n$$\n\\begin{aligned} S_t &= S_{t-1} A_t \\\\ "
      "&+ v_t k_t^\\top \\\\ &= S_{t-1} A_t + v_t k_t^\\top \\end{aligned}\n$$\n"
      "then\n$$\n\\begin{aligned} D &= d_1 - d_2 & w &= w_1 "
      "\\end{aligned}\n$$\nand\n$$\n\\Gamma = [g_1, g_2] ,\\quad "
      "\\overleftarrow{Q} = Q \\odot \\Gamma\n$$\n";
  const std::vector<Display> rows = displays_of(note);
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].text == "S_t &= S_{t-1} A_t \\\\ &+ v_t k_t^\\top");
  CHECK(rows[1].text == "&= S_{t-1} A_t + v_t k_t^\\top");
  CHECK(rows[2].text == "D &= d_1 - d_2");
  CHECK(rows[3].text == "w &= w_1");
  CHECK(rows[4].text == "\\Gamma = [g_1, g_2]");
  CHECK(rows[5].line == 11);
  Claim first = test_claim("first.step", sum_from(0)), second = test_claim("side", sum_from(0));
  first.source.file = second.source.file = "n.txt";
  first.quote = "&+ v_t k_t^\\top";
  second.quote = "D &= d_1 - d_2";
  const std::vector<NoClaimNeeded> reasons{{"n.txt", "\\Gamma = [g_1, g_2]", "a definition"},
                                           {"n.txt", "not in the note", "stale"}};
  const NoteCoverage c = coverage_of("n.txt", note, {&first, &second}, reasons);
  CHECK(c.claims[0] == std::vector<std::string>{"first.step"});
  CHECK(c.reasons[4] == "a definition");
  CHECK(c.uncovered() == std::vector<std::size_t>{1, 3, 5});
  REQUIRE(c.problems.size() == 1); // the reason whose quote is in no note
  // A claim meant at the second place its quote appears covers that place alone.
  Claim again = test_claim("again", sum_from(0));
  again.source.file = "n.txt";
  again.quote = "S_{t-1} A_t";
  again.occurrence = 2;
  const NoteCoverage twice = coverage_of("n.txt", note, {&again}, {});
  CHECK(twice.claims[0].empty());
  CHECK(twice.claims[1] == std::vector<std::string>{"again"});
  CHECK(coverage_markdown({c}).find("| n.txt | 6 | 2 | 1 | 3 |") != std::string::npos);

  // A note extracted from HTML: formula lines and a numbered statement.
  const std::string html = "Some prose with Qi𝑄Q_{i} inline.\nYi=SiZisubscript\\frac{S}{Z} "
                           "noise\nProposition 1.\nWhen so, then\nBij=bij(x)\\displaystyle "
                           "b\n(a) p=4 caption\n";
  const std::vector<Display> lines = displays_of(html);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].line == 2);
  CHECK(lines[1].text.rfind("Proposition 1.", 0) == 0);
  CHECK(lines[1].end == lines[2].end); // the statement runs to the end of its formula
}
