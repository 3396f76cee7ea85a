set -u
tar xJf gpu-carry.txz
C=build-gpu-carry
cublas=$(find /usr/local -name 'libcublas.so.*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/$C/lib:$(dirname "$cublas")
P=$(mktemp -d)
prof() { # name rule kernel-regex
  ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section Occupancy --section LaunchStats \
    --metrics smsp__inst_executed.sum,smsp__cycles_active.avg -k regex:"$3" --launch-count 1 \
    -o "$P/$1" $C/bin/gpu_bench --rule "$2" --kernels tensor-cores --warmup 0 --repeat 1 \
    --out /tmp/x.json > "$P/$1.log" 2>&1
  ncu -i "$P/$1.ncu-rep" --page source --csv --print-source sass > "$P/$1_sass.csv" 2>&1
  ncu -i "$P/$1.ncu-rep" --page details > "$P/$1_details.txt" 2>&1
  rm -f "$P/$1.ncu-rep"
}
prof kda_wy kda chunk_delta_wy_tc_kernel
prof gdn_wy gated_delta_rule chunk_delta_wy_tc_kernel
tar czf $OUT/prof.tgz -C $P .
grep -E "Duration|inst_executed.sum|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Dynamic Shared" $P/*_details.txt
S=$(mktemp -d)
T=${SAN_T:-480}
(timeout $T compute-sanitizer --tool memcheck --error-exitcode 9 $C/bin/gpu_kernel_tests \
  tensor_core_every_k_v_ragged_t_and_empty_sequence -c kda > $S/memcheck.log 2>&1; echo "memcheck kda exit $?" >> $S/memcheck.log) &
for t in bf16 fp16; do for kv in K64_V64 K64_V128 K128_V64 K128_V128; do
  (RC_PARAMS=max_success=1 timeout $T compute-sanitizer --tool racecheck --error-exitcode 9 $C/bin/gpu_kernel_tests \
    tensor_core_every_k_v_ragged_t_and_empty_sequence -c kda -c $t -c $kv > $S/racecheck_${t}_$kv.log 2>&1
   echo "racecheck kda $t $kv exit $?" >> $S/racecheck_${t}_$kv.log) &
done; done
wait
for f in $S/*.log; do echo "$(tail -1 $f); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1); $(grep -E '^(All tests passed|test cases:)' $f | tail -1)"; done | tee $OUT/sanitizer_kda.txt
