# verify and claims run in shards (--shard i/n), joined by ruleproof merge, equal the whole
# run but for the timing fields. (An incomplete or mixed set of shards: the bad-input table,
# property_tests/bad_input/cases.txt.) RULEPROOF, OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

include("${CMAKE_CURRENT_LIST_DIR}/ruleproof_runs.cmake")

set(verify verify --rule gla --rule kda --property chunkwise_and_parallel_equal_recurrent_any_chunk_size
       --property two_halves_with_carried_state_equal_one_run
    --scalar double --cases 2)
ruleproof(0 ${verify} --out "${OUT}/whole.json")
foreach(i 1 2 3)
  ruleproof(0 ${verify} --shard ${i}/3 --out "${OUT}/shard${i}.json")
endforeach()
ruleproof(0 merge "${OUT}/shard3.json" "${OUT}/shard1.json" "${OUT}/shard2.json"
          --out "${OUT}/merged.json")
expect_same("${OUT}/whole.json" "${OUT}/merged.json")

set(claims claims --note 002 --threads 1)
ruleproof(0 ${claims} --out "${OUT}/claims_whole")
foreach(i 1 2)
  ruleproof(0 ${claims} --shard ${i}/2 --out "${OUT}/claims_${i}")
endforeach()
ruleproof(0 merge "${OUT}/claims_1/claims.json" "${OUT}/claims_2/claims.json"
          --out "${OUT}/claims_merged.json")
expect_same("${OUT}/claims_whole/claims.json" "${OUT}/claims_merged.json")
