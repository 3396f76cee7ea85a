# The same seed gives byte-identical results: verify and claims, each run with --threads 1, then
# twice with --threads 2, write the same JSON report byte for byte but for the timing fields
# (started, finished, seconds: the envelope's lines of reporting/result.hpp's timing_fields);
# claims writes the same claims.md. RULEPROOF, OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

include("${CMAKE_CURRENT_LIST_DIR}/ruleproof_runs.cmake")

function(expect_same_file first second)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${first}" "${second}"
                  RESULT_VARIABLE differ)
  if(differ)
    execute_process(COMMAND diff "${first}" "${second}" OUTPUT_VARIABLE d)
    message(FATAL_ERROR "${second} differs from ${first}:\n${d}")
  endif()
endfunction()

# Rules of every bound family, with gradients and a case count above the thread count; in
# float128 too, where the build has it (DOUBLE_ONLY: the sanitizer build has double alone).
set(float128 --scalar float128)
if(DOUBLE_ONLY)
  set(float128)
endif()
set(verify verify --rule gla --rule kda --rule dplr --rule softmax_attn --rule sympow_p2_normalised_gated
    --property chunkwise_and_parallel_equal_recurrent_any_chunk_size
    --property chunk_backward_equals_finite_differences_equals_dual --scalar double
    ${float128} --cases 3 --seed 11)
# The sanitizer suite (scripts/sanitize_suite.sh) sets RULEPROOF_CLAIMS_POINTS, its draws a
# claim, as it sets RapidCheck's cases a property: the same comparisons, on fewer draws.
set(points)
if(DEFINED ENV{RULEPROOF_CLAIMS_POINTS})
  set(points --points $ENV{RULEPROOF_CLAIMS_POINTS})
endif()
set(claims claims --seed 5 ${points})
foreach(run 1 2 3)
  set(threads 2)
  if(run EQUAL 1)
    set(threads 1)
  endif()
  ruleproof(0 ${verify} --threads ${threads} --out "${OUT}/verify${run}.json")
  ruleproof(0 ${claims} --threads ${threads} --out "${OUT}/claims${run}")
endforeach()
foreach(run 2 3)
  expect_same("${OUT}/verify1.json" "${OUT}/verify${run}.json")
  expect_same("${OUT}/claims1/claims.json" "${OUT}/claims${run}/claims.json")
  expect_same_file("${OUT}/claims1/claims.md" "${OUT}/claims${run}/claims.md")
endforeach()
