# Runs verify, claims, gpu-check and check-dump on tiny inputs and checks that each writes a
# report conforming to reporting/schema/result-v1.schema.json, with a summary beside it; that
# check-dump's report and summary place a planted error at its batch, time step and head; and
# that no progress line is drawn when stderr is not a terminal.
# RULEPROOF, VALIDATE (validate_result), SCHEMA, WRITE_DUMP (write_test_dump), OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(run_command expected)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CI "${RULEPROOF}" ${ARGN}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL expected)
    message(FATAL_ERROR "ruleproof ${ARGN}: exit ${code}, expected ${expected}\n${out}\n${err}")
  endif()
  string(FIND "${err}" "\r" carriage)
  if(NOT carriage EQUAL -1 OR err MATCHES " left")
    message(FATAL_ERROR "ruleproof ${ARGN} drew progress on a stderr that is no terminal:\n${err}")
  endif()
endfunction()

run_command(0 verify --rule gla --property chunkwise_and_parallel_equal_recurrent_any_chunk_size --scalar double --cases 1
            --out "${OUT}/verify.json")
run_command(0 claims --claim 000.rope.relative --claim 000.rope.eq1 --threads 1
            --out "${OUT}/claims")
# Without a Hopper GPU: skipped, exit 0; with one: one case, which holds.
run_command(0 gpu-check --rule simple_gla --dtype bf16 --cases 1 --threads 1
            --out "${OUT}/gpu_check.json")
execute_process(COMMAND "${WRITE_DUMP}" "${OUT}/dump.safetensors" RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "write_test_dump failed")
endif()
run_command(1 check-dump "${OUT}/dump.safetensors" --rule gla --out "${OUT}/check_dump.json"
            --summary "${OUT}/dump_summary.md")

set(reports "${OUT}/verify.json" "${OUT}/claims/claims.json" "${OUT}/gpu_check.json"
            "${OUT}/check_dump.json")
execute_process(COMMAND "${VALIDATE}" "${SCHEMA}" ${reports} RESULT_VARIABLE code
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "a report breaks the schema:\n${out}\n${err}")
endif()
message(STATUS "${out}")
foreach(summary "${OUT}/verify.summary.md" "${OUT}/claims/claims.summary.md"
                "${OUT}/gpu_check.summary.md" "${OUT}/dump_summary.md")
  if(NOT EXISTS "${summary}")
    message(FATAL_ERROR "no summary ${summary}")
  endif()
endforeach()

# The planted error of write_test_dump: o[0, 3, 1, 2].
file(READ "${OUT}/check_dump.json" doc)
string(JSON n LENGTH "${doc}" results)
set(found FALSE)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${doc}" results ${i} id)
  if(id STREQUAL "gla/o")
    set(found TRUE)
    string(JSON verdict GET "${doc}" results ${i} verdict)
    string(JSON t GET "${doc}" results ${i} where time)
    string(JSON h GET "${doc}" results ${i} where head)
    string(JSON index GET "${doc}" results ${i} where index)
    string(REGEX REPLACE "[ \n]" "" index "${index}")
    if(NOT verdict STREQUAL "fails" OR NOT t EQUAL 3 OR NOT h EQUAL 1 OR NOT index STREQUAL "[0,3,1,2]")
      message(FATAL_ERROR "o: verdict ${verdict}, t ${t}, head ${h}, index ${index}; expected "
                          "fails at [0, 3, 1, 2]")
    endif()
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "check-dump wrote no result gla/o")
endif()
file(READ "${OUT}/dump_summary.md" md)
if(NOT md MATCHES "`o\\[0, 3, 1, 2\\]` \\(batch 0, t = 3, head 1\\)" OR
   NOT md MATCHES "ruleproof check-dump .*dump.safetensors --rule gla")
  message(FATAL_ERROR "the summary does not say where o fails or how to replay it:\n${md}")
endif()
