# ruleproof gate: exit 0 against its own baseline; 4 on a new failure, a NaN, an error grown
# beyond --factor, a missing result; 2 on a missing baseline, which it never writes without
# --update; --update writes it whole; --junit writes JUnit XML. (A corrupt, other-version or
# otherwise bad baseline or run: the bad-input table, property_tests/bad_input/cases.txt.)
# RULEPROOF, OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(expect code_expected pattern)
  execute_process(COMMAND "${RULEPROOF}" ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT code EQUAL code_expected OR NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "ruleproof ${ARGN}: exit ${code} (expected ${code_expected}), output "
                        "should match '${pattern}':\n${out}\n${err}")
  endif()
endfunction()

set(run "${OUT}/run.json")
set(base "${OUT}/baseline.json")
expect(0 "" verify --rule gla --property chunkwise_and_parallel_equal_recurrent_any_chunk_size
       --property two_halves_with_carried_state_equal_one_run --scalar double --cases 1
       --out "${run}")

expect(2 "no such baseline.*--update" gate --baseline "${base}" --current "${run}")
if(EXISTS "${base}")
  message(FATAL_ERROR "gate wrote the baseline without --update")
endif()
expect(0 "baseline .* created" gate --baseline "${base}" --current "${run}" --update)
expect(0 "gate: passes" gate --baseline "${base}" --current "${run}" --junit "${OUT}/same.xml")
file(READ "${OUT}/same.xml" xml)
if(NOT xml MATCHES "<testsuite name=\"ruleproof verify\" tests=\"[1-9][0-9]*\" failures=\"0\"")
  message(FATAL_ERROR "JUnit of a passing gate:\n${xml}")
endif()

# Regressions, each in a copy of the run.
file(READ "${run}" doc)
string(JSON ratio GET "${doc}" results 0 error_over_allowed)
string(JSON failing SET "${doc}" results 0 verdict "\"fails\"")
file(WRITE "${OUT}/failing.json" "${failing}")
expect(4 "new failure" gate --baseline "${base}" --current "${OUT}/failing.json" --junit
       "${OUT}/failing.xml")
file(READ "${OUT}/failing.xml" xml)
if(NOT xml MATCHES "failures=\"1\"" OR NOT xml MATCHES "<failure type=\"new failure\"")
  message(FATAL_ERROR "JUnit of a new failure:\n${xml}")
endif()
string(JSON nan SET "${doc}" results 0 worst_error "\"nan\"")
file(WRITE "${OUT}/nan.json" "${nan}")
expect(4 "NaN" gate --baseline "${base}" --current "${OUT}/nan.json")
# error/allowed 3 times max(baseline's, 0.01): over the default factor 2, under 4.
if(ratio LESS 0.01)
  set(ratio 0.01)
endif()
execute_process(COMMAND awk "BEGIN { printf \"%.17g\", 3 * ${ratio} }" OUTPUT_VARIABLE grown)
string(JSON grew SET "${doc}" results 0 error_over_allowed "${grown}")
file(WRITE "${OUT}/grew.json" "${grew}")
expect(4 "error grew" gate --baseline "${base}" --current "${OUT}/grew.json")
expect(0 "gate: passes" gate --baseline "${base}" --current "${OUT}/grew.json" --factor 4)
string(JSON missing REMOVE "${doc}" results 0)
file(WRITE "${OUT}/missing.json" "${missing}")
expect(4 "missing" gate --baseline "${base}" --current "${OUT}/missing.json")

# --update accepts a regression deliberately, and says so.
expect(0 "replaced.*accepts the 1 regression" gate --baseline "${base}" --current
       "${OUT}/failing.json" --update)
expect(0 "gate: passes" gate --baseline "${base}" --current "${OUT}/failing.json")
file(GLOB leftovers "${OUT}/*.tmp.*")
if(leftovers)
  message(FATAL_ERROR "temporary files left: ${leftovers}")
endif()
