# Runs `ruleproof claims` and compares its claims.md with the committed reports/claims.md.
# RULEPROOF (the binary), OUT (a scratch folder), COMMITTED (reports/claims.md).
execute_process(COMMAND "${RULEPROOF}" claims --out "${OUT}" RESULT_VARIABLE code
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "ruleproof claims exited ${code}\n${out}\n${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/claims.md" "${COMMITTED}"
                RESULT_VARIABLE differ)
if(differ)
  execute_process(COMMAND diff -u "${COMMITTED}" "${OUT}/claims.md" OUTPUT_VARIABLE changes)
  message(FATAL_ERROR "reports/claims.md is not what `ruleproof claims` makes now: regenerate "
                      "it (build/cli/ruleproof claims --out reports/out && cp "
                      "reports/out/claims.md reports/claims.md)\n${changes}")
endif()
