# Runs one libFuzzer target for SECONDS at most, and RUNS inputs where given (CTest
# fuzz_<target>; scripts/fuzz.sh gives no RUNS and a random seed): from the
# seed corpus and the regression inputs, read only; new inputs, crash files and the
# targets' scratch files go to WORK (made afresh), never into the source tree.
#   cmake -DFUZZER=... -DSECONDS=... [-DRUNS=...] -DWORK=... -DCORPUS=... [-DREGRESSIONS=...] [-DDICT=...]
#         [-DKEEP=1 (reuse WORK's corpus)] [-DMALLOC_LIMIT_MB=N|physical] -P run_fuzzer.cmake
# MALLOC_LIMIT_MB: the largest single allocation libFuzzer lets pass (default: the RSS
# limit, 2048); "physical" for the image readers, which refuse headers claiming more than
# the machine's memory themselves and may allocate up to that before a short file fails.
foreach(var FUZZER SECONDS WORK CORPUS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake needs -D${var}=...")
  endif()
endforeach()
if(NOT KEEP)
  file(REMOVE_RECURSE ${WORK})
endif()
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/tmp)
set(inputs ${CORPUS})
if(REGRESSIONS AND IS_DIRECTORY ${REGRESSIONS})
  list(APPEND inputs ${REGRESSIONS})
endif()
# -max_len: mutate small inputs (longer regression inputs are read truncated here; the
# replay tests run them whole).
# -seed and -runs: CTest's short runs start from one fixed seed and stop after a fixed
# number of inputs, so CI does as much on a loaded machine as on an idle one (the path
# still varies a little: two runs here ended with coverage a few features apart, so a
# run can still find a new bug -- a real one, reported with its input); -reload=0: no
# rereading of the corpus folder on a timer.  scripts/fuzz.sh passes SEED=0 (a fresh
# random seed) and no RUNS for the long runs that look for new bugs.
if(NOT DEFINED SEED)
  set(SEED 1)
endif()
set(options -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -reload=0
            -seed=${SEED} -artifact_prefix=${WORK}/)
if(RUNS)
  list(APPEND options -runs=${RUNS})
endif()
if(MALLOC_LIMIT_MB STREQUAL "physical")
  cmake_host_system_information(RESULT physical QUERY TOTAL_PHYSICAL_MEMORY)
  math(EXPR MALLOC_LIMIT_MB "${physical} + 1")
endif()
if(MALLOC_LIMIT_MB)
  list(APPEND options -malloc_limit_mb=${MALLOC_LIMIT_MB})
endif()
if(DICT)
  list(APPEND options -dict=${DICT})
endif()
set(artifacts ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-* ${WORK}/slow-unit-*)
file(GLOB earlier ${artifacts})  # KEEP: what an earlier run saved is not this run's finding
set(ENV{TMPDIR} ${WORK}/tmp)
set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=0")
set(ENV{LSAN_OPTIONS} "suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp:print_suppressions=0")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
execute_process(COMMAND ${FUZZER} ${options} ${WORK}/corpus ${inputs}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
# libFuzzer's log is long; what matters is the end: the stats, or the report and the input.
string(LENGTH "${out}" length)
if(length GREATER 12000)
  math(EXPR from "${length} - 12000")
  string(SUBSTRING "${out}" ${from} -1 out)
  set(out "...\n${out}")
endif()
message("${out}")
if(NOT result EQUAL 0)
  file(GLOB found ${artifacts})
  if(earlier)
    list(REMOVE_ITEM found ${earlier})
  endif()
  message(FATAL_ERROR "${FUZZER} failed (${result}); the input: ${found}\n"
                      "Fix the parser, then add the input to ${REGRESSIONS}/ so that fuzz_replay covers it.")
endif()
