# What the cli tests' scripts share (include()d by them): running ruleproof, and comparing two
# reports of one run but for the envelope's timing fields. RULEPROOF: the program.

# Runs ruleproof with ARGN; fails unless it exits `expected`.
function(ruleproof expected)
  execute_process(COMMAND "${RULEPROOF}" ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT code EQUAL expected)
    message(FATAL_ERROR "ruleproof ${ARGN}: exit ${code}, expected ${expected}\n${out}\n${err}")
  endif()
endfunction()

# The file's text without the envelope's timing lines (started, finished, seconds: the
# top level, one space of indent, as reporting/result.hpp writes them).
function(without_timing file result)
  file(READ "${file}" text)
  foreach(field started finished seconds)
    string(REGEX REPLACE "\n \"${field}\": [^\n]*\n" "\n" text "${text}")
  endforeach()
  foreach(field started finished seconds)
    if(text MATCHES "\n \"${field}\":")
      message(FATAL_ERROR "${file}: the timing field ${field} was not removed")
    endif()
  endforeach()
  set(${result} "${text}" PARENT_SCOPE)
endfunction()

# Fails unless the two reports are byte for byte the same but for their timing lines.
function(expect_same first second)
  without_timing("${first}" a)
  without_timing("${second}" b)
  if(NOT a STREQUAL b)
    file(WRITE "${first}.compared" "${a}")
    file(WRITE "${second}.compared" "${b}")
    execute_process(COMMAND diff "${first}.compared" "${second}.compared" OUTPUT_VARIABLE d)
    message(FATAL_ERROR "${second} differs from ${first}:\n${d}")
  endif()
endfunction()
