# The HTML report in a real browser: small real runs of verify, claims and check-dump, with the
# committed GPU run, rendered into one page by `ruleproof html`; headless Chromium opens it,
# and the DOM after its scripts ran must show every plot drawn (none empty), one table row
# per result, and no script error; a screenshot goes to OUT. The same check must fail on a
# copy of the page with a script error planted in it. Chromium runs under a time limit, in a
# fresh profile folder, and no process of it may outlive its run.
# RULEPROOF, WRITE_DUMP (write_test_dump), GPU_CHECK (a gpu-check result file), CHROMIUM,
# OUT (a folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
if(NOT EXISTS "${CHROMIUM}")
  message("chromium not found at ${CHROMIUM}: the browser test is skipped "
          "(scripts/bootstrap.sh installs it)")
  return()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/ruleproof_runs.cmake")

ruleproof(0 verify --rule gla --rule gated_delta_rule --property
          chunkwise_and_parallel_equal_recurrent_any_chunk_size --scalar double --cases 1
          --out "${OUT}/verify.json")
ruleproof(0 claims --claim 000.rope.relative --claim 000.rope.eq1 --claim 002.gla.recurrent
          --threads 1 --out "${OUT}/claims")
execute_process(COMMAND "${WRITE_DUMP}" "${OUT}/dump.safetensors" RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "write_test_dump failed")
endif()
ruleproof(1 check-dump "${OUT}/dump.safetensors" --rule gla --out "${OUT}/check_dump.json")
# The dump's planted error, o[0, 3, 1, 2], is the kernel's worst in its error profile of o:
# head 1, time step 3.
file(READ "${OUT}/check_dump.json" doc)
string(JSON n LENGTH "${doc}" details profiles)
set(worst "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON output GET "${doc}" details profiles ${i} output)
  string(JSON compared GET "${doc}" details profiles ${i} compared)
  if(output STREQUAL "o" AND compared MATCHES "^kernel")
    string(JSON time GET "${doc}" details profiles ${i} time)
    string(REGEX MATCHALL "[-+.0-9eE]+" errors "${time}") # [[t0, ...], [t0, ...]]: 2 heads
    list(LENGTH errors count)
    set(top -1)
    math(EXPR last_e "${count} - 1")
    foreach(k RANGE ${last_e})
      list(GET errors ${k} e)
      if(e GREATER top) # CMake compares numbers as doubles where both parse
        set(top ${e})
        set(worst ${k})
      endif()
    endforeach()
  endif()
endforeach()
if(NOT worst EQUAL 8) # head 1 of T = 5: index 5 + 3
  message(FATAL_ERROR "the kernel's profile of o peaks at entry ${worst}, not head 1, t = 3")
endif()

set(runs "${OUT}/verify.json" "${OUT}/claims/claims.json" "${GPU_CHECK}" "${OUT}/check_dump.json")
ruleproof(0 html ${runs} --out "${OUT}/report.html")
foreach(page verify.html claims/claims.html check_dump.html)
  if(NOT EXISTS "${OUT}/${page}")
    message(FATAL_ERROR "no page ${page} beside its JSON")
  endif()
endforeach()

# What the page must draw, counted from the runs: a table row per result, a table per run, a
# plot per error profile, per comparison of the growths and per run of kernel results.
set(rows 0)
set(profiles 0)
set(growths "")
set(kernel_runs 0)
foreach(run ${runs})
  file(READ "${run}" doc)
  string(JSON n LENGTH "${doc}" results)
  math(EXPR rows "${rows} + ${n}")
  string(FIND "${doc}" "\"twin_error\"" twin)
  if(NOT twin EQUAL -1)
    math(EXPR kernel_runs "${kernel_runs} + 1")
  endif()
  string(JSON p ERROR_VARIABLE none LENGTH "${doc}" details profiles)
  if(NOT none)
    math(EXPR profiles "${profiles} + ${p}")
  endif()
  string(JSON g ERROR_VARIABLE none LENGTH "${doc}" details growth)
  if(NOT none AND g GREATER 0)
    math(EXPR last "${g} - 1")
    foreach(i RANGE ${last})
      string(JSON what GET "${doc}" details growth ${i} compared)
      string(JSON scalar GET "${doc}" details growth ${i} scalar)
      list(APPEND growths "${what} (${scalar})")
    endforeach()
  endif()
endforeach()
list(REMOVE_DUPLICATES growths)
list(LENGTH growths growth_plots)
list(LENGTH runs tables)
math(EXPR plots "${profiles} + ${growth_plots} + ${kernel_runs}")
if(profiles EQUAL 0 OR growth_plots EQUAL 0 OR kernel_runs EQUAL 0)
  message(FATAL_ERROR "the runs hold ${profiles} profiles, ${growth_plots} growths, "
                      "${kernel_runs} kernel runs: nothing to test the plots on")
endif()

# Runs Chromium headless on a page, in a fresh profile, killed (its whole process group) after
# 60 s; sets `dom` in the caller to what it printed. No process of it may be left.
set(chromium_runs 0)
function(chromium page)
  math(EXPR k "${chromium_runs} + 1")
  set(chromium_runs ${k} PARENT_SCOPE)
  set(profile "${OUT}/chromium-profile-${k}")
  execute_process(
    COMMAND timeout --kill-after=5 60 "${CHROMIUM}" --headless --no-sandbox --disable-gpu
            --disable-quic --no-first-run --disable-background-networking
            --disable-component-update --disable-sync "--user-data-dir=${profile}" ${ARGN}
            "file://${page}"
    TIMEOUT 90 RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "chromium ${ARGN} ${page}: exit ${code}\n${err}")
  endif()
  execute_process(COMMAND pgrep -f -- "${profile}" OUTPUT_VARIABLE left)
  if(NOT left STREQUAL "")
    message(FATAL_ERROR "chromium left processes running: ${left}")
  endif()
  set(dom "${out}" PARENT_SCOPE)
endfunction()

# The page's own account of what it drew (#render-status, written by its script), checked
# against what the runs hold; sets `problems` in the caller (empty when the page rendered).
function(check_rendered dom)
  set(found "")
  if(dom MATCHES "<pre id=\"render-status\" data-state=\"([^\"]*)\">([^<]*)</pre>")
    set(state "${CMAKE_MATCH_1}")
    set(json "${CMAKE_MATCH_2}")
    string(REPLACE "&quot;" "\"" json "${json}")
    string(REPLACE "&lt;" "<" json "${json}")
    string(REPLACE "&gt;" ">" json "${json}")
    string(REPLACE "&amp;" "&" json "${json}")
  else()
    set(problems "no #render-status in the DOM" PARENT_SCOPE)
    return()
  endif()
  string(JSON drawn_plots ERROR_VARIABLE bad GET "${json}" plots)
  if(bad)
    set(problems "state ${state}, status not read: ${json}" PARENT_SCOPE)
    return()
  endif()
  string(JSON drawn_rows GET "${json}" rows)
  string(JSON drawn_tables GET "${json}" tables)
  string(JSON paths GET "${json}" paths)
  string(JSON points GET "${json}" points)
  string(JSON errors GET "${json}" errors)
  string(JSON empty GET "${json}" empty_plots)
  set(p "")
  if(NOT state STREQUAL "done")
    list(APPEND p "state ${state}")
  endif()
  if(NOT errors MATCHES "^\\[ *\\]$")
    list(APPEND p "script errors ${errors}")
  endif()
  if(NOT empty MATCHES "^\\[ *\\]$")
    list(APPEND p "empty plots ${empty}")
  endif()
  if(NOT drawn_plots EQUAL plots OR NOT drawn_tables EQUAL tables OR NOT drawn_rows EQUAL rows)
    list(APPEND p "drew ${drawn_plots} plots, ${drawn_tables} tables, ${drawn_rows} rows; the runs "
                  "hold ${plots}, ${tables}, ${rows}")
  endif()
  if(paths LESS plots OR points EQUAL 0)
    list(APPEND p "only ${paths} paths and ${points} points in ${drawn_plots} plots")
  endif()
  string(REGEX MATCHALL "<figure class=\"plot\"><figcaption[^>]*>[^<]*</figcaption><svg" svgs
         "${dom}")
  list(LENGTH svgs figures)
  if(NOT figures EQUAL plots)
    list(APPEND p "${figures} figures with an svg in the DOM, expected ${plots}")
  endif()
  set(problems "${p}" PARENT_SCOPE)
endfunction()

chromium("${OUT}/report.html" --dump-dom)
check_rendered("${dom}")
if(problems)
  message(FATAL_ERROR "the page did not render: ${problems}")
endif()
message(STATUS "rendered ${plots} plots, ${tables} tables, ${rows} rows, no script error")

chromium("${OUT}/report.html" --screenshot=${OUT}/report.png --window-size=1400,2600
         --hide-scrollbars)
file(SIZE "${OUT}/report.png" png_bytes)
if(png_bytes LESS 20000)
  message(FATAL_ERROR "the screenshot ${OUT}/report.png has only ${png_bytes} bytes")
endif()
message(STATUS "screenshot ${OUT}/report.png, ${png_bytes} bytes")

# The check must see a broken page: a script error planted before </body>.
file(READ "${OUT}/report.html" page)
string(REPLACE "</body>" "<script>window.planted_error_here();</script>\n</body>" page "${page}")
file(WRITE "${OUT}/broken.html" "${page}")
chromium("${OUT}/broken.html" --dump-dom)
check_rendered("${dom}")
if(NOT problems MATCHES "script errors .*planted_error_here")
  message(FATAL_ERROR "a planted script error went unseen: '${problems}'")
endif()
message(STATUS "a planted script error is caught: ${problems}")
