# The mutation runner must be able to fail: run on runner_check.txt (a caught mutant and one that
# changes only a comment) it must exit 1, report 1 / 2 and name the survivor.
# cmake -DRUNNER=run_mutants.sh -DTABLE=runner_check.txt -DWORK=DIR -P runner_check.cmake
set(report ${WORK}/mutation.md)
file(REMOVE ${report})
execute_process(COMMAND ${CMAKE_COMMAND} -E env RULEPROOF_MUTATION_DIR=${WORK}
                        RULEPROOF_MUTATION_REPORT=${report} bash ${RUNNER} ${TABLE}
                RESULT_VARIABLE code ERROR_VARIABLE said)
message("${said}")
if(NOT code EQUAL 1)
  message(FATAL_ERROR "run_mutants.sh exited ${code}, not 1 (a mutant survived)")
endif()
file(READ ${report} text)
foreach(expected "Mutants caught / mutants tried: \\*\\*1 / 2\\*\\*"
                 "[|] bf16_rounds_ties_up [|][^\n]*[|] caught [|] io_tests: "
                 "[|] a_comment_edited [|][^\n]*[|] SURVIVED [|] nothing failed [|]")
  if(NOT text MATCHES "${expected}")
    message(FATAL_ERROR "the report lacks '${expected}':\n${text}")
  endif()
endforeach()
if(NOT said MATCHES "survived: a_comment_edited")
  message(FATAL_ERROR "run_mutants.sh did not name the survivor")
endif()
