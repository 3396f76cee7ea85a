# Runs one case of the table: RULEPROOF (the binary), ARGS (a ;-list, where $OUT stands for a
# file the command writes and $OUTDIR for a folder it writes), CODE, MESSAGE (regex), OUT (a
# path for $OUT; $OUTDIR is OUT.d). Run with `cmake -D... -P check_case.cmake`.
#
# Before the call every output holds a sentinel: $OUT and what goes beside it (x.json ->
# x.summary.md, x.md, x.html), and claims' files in $OUTDIR. Exit 2 (bad input) must leave
# each exactly as it was; exit 0 or 1 (a run that checked something) must have replaced $OUT.
# The message is looked for in stdout, stderr and, after exit 0 or 1, $OUT.
cmake_minimum_required(VERSION 3.25)
set(sentinel "left as it was before the failed call\n")
string(REGEX REPLACE "\\.json$" "" stem "${OUT}")
set(outdir "${OUT}.d")
set(guarded "${OUT}" "${stem}.summary.md" "${stem}.md" "${stem}.html" "${outdir}/claims.json"
            "${outdir}/claims.md" "${outdir}/claims.summary.md" "${outdir}/claims.html")
file(REMOVE_RECURSE "${outdir}")
file(MAKE_DIRECTORY "${outdir}")
foreach(f IN LISTS guarded)
  file(WRITE "${f}" "${sentinel}")
endforeach()
list(TRANSFORM ARGS REPLACE "^\\$OUTDIR$" "${outdir}")
list(TRANSFORM ARGS REPLACE "^\\$OUT$" "${OUT}")

execute_process(COMMAND "${RULEPROOF}" ${ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT code EQUAL CODE)
  message(FATAL_ERROR "exit code ${code}, expected ${CODE}\nstdout: ${out}\nstderr: ${err}")
endif()
set(written "")
if(NOT CODE EQUAL 2 AND "${OUT}" IN_LIST ARGS)
  file(READ "${OUT}" written)
  if(written STREQUAL sentinel)
    message(FATAL_ERROR "exit ${code}, but ${OUT} was not written")
  endif()
endif()
if(NOT "${out}${err}${written}" MATCHES "${MESSAGE}")
  message(FATAL_ERROR "message does not match '${MESSAGE}':\n${out}${err}")
endif()
if(CODE EQUAL 2)
  foreach(f IN LISTS guarded)
    file(READ "${f}" left)
    if(NOT left STREQUAL sentinel)
      message(FATAL_ERROR "the failed call changed ${f}: ${left}")
    endif()
  endforeach()
endif()
file(GLOB leftovers "${OUT}.tmp.*" "${stem}.summary.md.tmp.*" "${outdir}/*.tmp.*")
if(leftovers)
  message(FATAL_ERROR "temporary files left: ${leftovers}")
endif()
message(STATUS "exit ${code}: ${out}${err}")
