# Runs one libFuzzer target, in one of two modes:
#  - REPLAY=1 (CTest fuzz_<target>): every file of the seed corpus and the regression
#    inputs once, in name order, no mutation: deterministic, the same inputs as the
#    replay test but under the sanitized, coverage-instrumented build;
#  - else (scripts/fuzz.sh): a search for SECONDS from the corpus and the regression
#    inputs (read only), RUNS inputs at most where given, from SEED (0: a fresh one).
# New inputs, crash files and the targets' scratch files go to WORK (made afresh), never
# into the source tree.
#   cmake -DFUZZER=... -DSECONDS=... [-DREPLAY=1] [-DRUNS=...] [-DSEED=...] -DWORK=... -DCORPUS=...
#         [-DREGRESSIONS=...] [-DDICT=...] [-DKEEP=1 (reuse WORK's corpus)] [-DMALLOC_LIMIT_MB=N|physical]
#         -P run_fuzzer.cmake
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
# Searching: -max_len: mutate small inputs (longer regression inputs are read truncated;
# the replays run them whole); -reload=0: no rereading of the corpus folder on a timer.
# Replaying: the files themselves as arguments (libFuzzer then runs each once and stops).
if(NOT DEFINED SEED)
  set(SEED 0)
endif()
set(options -timeout=10 -rss_limit_mb=2048 -artifact_prefix=${WORK}/)
if(REPLAY)
  set(inputs_files "")
  foreach(dir IN LISTS inputs)
    file(GLOB found LIST_DIRECTORIES false ${dir}/*)
    list(FILTER found EXCLUDE REGEX "/\\.[^/]*$")  # .gitkeep
    list(SORT found)
    list(APPEND inputs_files ${found})
  endforeach()
  list(LENGTH inputs_files count)
  if(count EQUAL 0)
    message(FATAL_ERROR "no inputs to replay in ${inputs}")
  endif()
  set(inputs ${inputs_files})
else()
  list(APPEND options -max_total_time=${SECONDS} -max_len=4096 -print_final_stats=1 -reload=0 -seed=${SEED})
  if(RUNS)
    list(APPEND options -runs=${RUNS})
  endif()
  list(PREPEND inputs ${WORK}/corpus)
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
# (a replay is bounded by SECONDS here; a search by -max_total_time, which it overruns by
# the time its last input takes)
set(limit "")
if(REPLAY)
  set(limit TIMEOUT ${SECONDS})
endif()
execute_process(COMMAND ${FUZZER} ${options} ${inputs}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out ${limit})
if(REPLAY AND result EQUAL 0)
  string(REGEX MATCHALL "Executed [^\n]+" ran "${out}")
  list(LENGTH ran ran_count)
  if(NOT ran_count EQUAL count)
    message(FATAL_ERROR "${FUZZER}: replayed ${ran_count} of ${count} inputs")
  endif()
  message("replayed ${count} inputs under ${FUZZER}")
  return()
endif()
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
