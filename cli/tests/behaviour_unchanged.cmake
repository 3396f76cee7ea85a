# Behaviour unchanged by a change of layout: verify (every rule, property and scalar, one case
# each) and claims, each with a fixed seed, write the same JSON as when the digests in
# behaviour_digests.cmake were recorded, but for the lines that name the run rather than its
# results (the timing fields, the machine, the commit). In verify's report every number with a
# fraction or an exponent is left out as well (integers, verdicts, ids, counts and texts stay):
# its double-precision errors and the bounds derived from them move in their last digits with
# the C library's exp (glibc picks an FMA or a plain variant by the processor: on one machine
# the two gave 567 differing lines, errors of 2.2e-16 against 2.8e-16 and bounds differing in
# their fifth digit), so its full digest named the machine rather than the behaviour. For the
# same reason the place of each check's worst error (`where`: batch, head, time, index) is left
# out: it is picked by comparing those errors. d3410c2, whose digest held on the machines that
# recorded and checked it, gave another on an Intel Xeon with AVX-512 (the same with its glibc
# variants turned off by glibc.cpu.hwcaps), 22 bytes shorter, all of its integers but these
# places fixed by the shapes, seeds and verdicts. That the places are what moved is an inference,
# not a comparison (the recorded text is not kept); a likely cause is the long double scalar's
# exp and log, which glibc computes with x87 instructions whose last bits differ between
# processors. On a difference the normalised reports are left in OUT, to be compared with those
# of the recording commit.
# RULEPROOF, OUT (a folder); RECORD=ON rewrites the digest file from this run instead, for a
# change that means to change the results (say so in its commit message).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

include("${CMAKE_CURRENT_LIST_DIR}/ruleproof_runs.cmake")
set(digests "${CMAKE_CURRENT_LIST_DIR}/behaviour_digests.cmake")

# The report's text without what names the run: timing lines, the machine block, the commit.
function(normalised file result)
  without_timing("${file}" text)
  string(REGEX REPLACE "\n \"machine\": {[^}]*}," "\n" text "${text}")
  string(REGEX REPLACE "\n  \"commit\": [^\n]*\n" "\n" text "${text}")
  if(text MATCHES "\n \"machine\":" OR text MATCHES "\n  \"commit\":")
    message(FATAL_ERROR "${file}: the machine or the commit was not removed")
  endif()
  set(${result} "${text}" PARENT_SCOPE)
endfunction()

# `text` with every number that has a fraction or an exponent replaced by #, and each worst
# error's place by "where": #.
function(without_fractions text result)
  string(REGEX REPLACE "-?[0-9]+\\.[0-9]+([eE][-+]?[0-9]+)?|-?[0-9]+[eE][-+]?[0-9]+" "#" text
                       "${text}")
  string(REGEX REPLACE "\"where\": {[^}]*}" "\"where\": #" text "${text}")
  set(${result} "${text}" PARENT_SCOPE)
endfunction()

ruleproof(0 verify --cases 1 --seed 11 --threads 2 --out "${OUT}/verify.json")
ruleproof(0 claims --seed 5 --threads 2 --out "${OUT}/claims")

set(recorded)
foreach(run verify claims/claims)
  normalised("${OUT}/${run}.json" text)
  if(run STREQUAL "verify")
    without_fractions("${text}" text)
  endif()
  string(REPLACE "/" "_" name "${run}")
  file(WRITE "${OUT}/${name}.normalised.json" "${text}")
  string(SHA256 digest "${text}")
  string(LENGTH "${text}" length)
  string(TOUPPER "${name}" key)
  string(APPEND recorded "set(${key}_DIGEST ${digest}) # ${length} bytes\n")
  set(${key}_NOW ${digest})
endforeach()

if(RECORD)
  file(WRITE "${digests}"
       "# Digests of verify --cases 1 --seed 11 and claims --seed 5, normalised as\n"
       "# behaviour_unchanged.cmake says; written by that script with -DRECORD=ON.\n${recorded}")
  message(STATUS "recorded ${digests}")
  return()
endif()

include("${digests}")
set(changed)
foreach(key VERIFY CLAIMS_CLAIMS)
  if(NOT ${key}_NOW STREQUAL ${key}_DIGEST)
    string(APPEND changed "  ${key}: ${${key}_NOW}, recorded ${${key}_DIGEST}\n")
  endif()
endforeach()
if(changed)
  message(FATAL_ERROR "the reports differ from those recorded in ${digests}:\n${changed}"
                      "the normalised reports are in ${OUT}")
endif()
