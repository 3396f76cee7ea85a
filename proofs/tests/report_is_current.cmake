# Runs `ruleproof claims` and compares its claims.md with the committed reports/claims.md.
# RULEPROOF (the binary), OUT (a scratch folder), COMMITTED (reports/claims.md).
execute_process(COMMAND "${RULEPROOF}" claims --out "${OUT}" RESULT_VARIABLE code
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "ruleproof claims exited ${code}\n${out}\n${err}")
endif()
# Without the seed notes (a checkout with no ../shared/seeds), claims.md cannot hold the
# coverage tables: the part before them is compared, and the test says what it left out.
file(READ "${OUT}/claims.md" fresh)
set(heading "\n## Coverage of the notes\n")
if(fresh MATCHES "Not computed: the seed notes were not found")
  file(READ "${COMMITTED}" committed)
  string(FIND "${fresh}" "${heading}" cut_fresh)
  string(FIND "${committed}" "${heading}" cut_committed)
  string(SUBSTRING "${fresh}" 0 ${cut_fresh} fresh)
  string(SUBSTRING "${committed}" 0 ${cut_committed} committed)
  file(WRITE "${OUT}/claims.before_coverage.md" "${fresh}")
  file(WRITE "${OUT}/committed.before_coverage.md" "${committed}")
  message(STATUS "seed notes not found: the coverage tables are not compared")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/claims.before_coverage.md"
                          "${OUT}/committed.before_coverage.md" RESULT_VARIABLE differ)
else()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/claims.md" "${COMMITTED}"
                  RESULT_VARIABLE differ)
endif()
if(differ)
  execute_process(COMMAND diff -u "${COMMITTED}" "${OUT}/claims.md" OUTPUT_VARIABLE changes)
  message(FATAL_ERROR "reports/claims.md is not what `ruleproof claims` makes now: regenerate "
                      "it (build/cli/ruleproof claims --out reports/out && cp "
                      "reports/out/claims.md reports/claims.md)\n${changes}")
endif()
