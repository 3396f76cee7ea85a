# Writes the generated files of the bad-input table into OUT ($F in cases.txt): the safetensors
# dumps of write_bad_dumps, and result files for gate and merge: a whole run, its two shards, a
# shard of another seed and one of another command, and copies of the run broken one way each.
# RULEPROOF, WRITE_DUMPS (the programs), OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(must_run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit ${code}\n${out}\n${err}")
  endif()
endfunction()

must_run("${WRITE_DUMPS}" "${OUT}")

set(verify "${RULEPROOF}" verify --rule gla --rule simple_gla
    --property two_halves_with_carried_state_equal_one_run
    --scalar double --cases 1 --threads 1)
must_run(${verify} --out "${OUT}/run.json")
foreach(i 1 2)
  must_run(${verify} --shard ${i}/2 --out "${OUT}/shard${i}of2.json")
endforeach()
must_run(${verify} --seed 7 --shard 2/2 --out "${OUT}/seed7_shard2of2.json")
must_run("${RULEPROOF}" claims --claim 000.rope.relative --claim 000.rope.eq1 --threads 1
         --shard 2/2 --out "${OUT}/claims_shard")
file(COPY_FILE "${OUT}/claims_shard/claims.json" "${OUT}/claims_shard2of2.json")
must_run("${RULEPROOF}" claims --claim 000.rope.relative --threads 1 --out "${OUT}/claims_run")
file(COPY_FILE "${OUT}/claims_run/claims.json" "${OUT}/claims_run.json")

file(READ "${OUT}/run.json" run)
string(JSON v2 SET "${run}" version 2)
file(WRITE "${OUT}/version2.json" "${v2}")
string(JSON other SET "${run}" format "\"something-else\"")
file(WRITE "${OUT}/other_format.json" "${other}")
string(JSON verdict SET "${run}" results 0 verdict "\"maybe\"")
file(WRITE "${OUT}/bad_verdict.json" "${verdict}")
string(JSON no_results REMOVE "${run}" results)
file(WRITE "${OUT}/no_results.json" "${no_results}")
string(SUBSTRING "${run}" 0 100 cut)
file(WRITE "${OUT}/truncated.json" "${cut}")
file(WRITE "${OUT}/not_an_object.json" "[1, 2, 3]\n")
