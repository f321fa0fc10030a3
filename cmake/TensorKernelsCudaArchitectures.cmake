# Which GPUs the CUDA backends are built for.
#
# tk_cuda_supported_architectures(<out> <nvcc>): the real architectures (75, 80, ...) the
# given nvcc builds machine code for (`nvcc --list-gpu-code`, sm_XX entries), ascending.
#
# tk_cuda_default_architectures(<out> <nvcc>): every one of them as machine code, plus PTX
# of the newest, in CMAKE_CUDA_ARCHITECTURES' syntax ("75-real;...;120-real;121"): a GPU of
# any architecture this CUDA knows runs its own machine code, and a newer one compiles the
# PTX when the program starts.  Without machine code or PTX that a GPU can run, the probe
# kernel of tk_cuda_device_usable fails and `--backend auto` silently takes the CPU.
#
# Asking nvcc rather than writing the list down keeps the default right for the next CUDA
# (CUDA 13 dropped sm_50..sm_72 and added sm_110/sm_121; CMake 3.25's "all" predates both).

function(tk_cuda_supported_architectures out nvcc)
  execute_process(COMMAND "${nvcc}" --list-gpu-code RESULT_VARIABLE rc OUTPUT_VARIABLE codes ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "${nvcc} --list-gpu-code failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "sm_[0-9]+" codes "${codes}")
  set(archs "")
  foreach(code IN LISTS codes)
    string(SUBSTRING "${code}" 3 -1 arch)
    list(APPEND archs ${arch})
  endforeach()
  if(NOT archs)
    message(FATAL_ERROR "${nvcc} --list-gpu-code lists no sm_XX architecture")
  endif()
  list(REMOVE_DUPLICATES archs)
  list(SORT archs COMPARE NATURAL)
  set(${out} ${archs} PARENT_SCOPE)
endfunction()

function(tk_cuda_default_architectures out nvcc)
  tk_cuda_supported_architectures(archs "${nvcc}")
  list(POP_BACK archs newest)
  list(TRANSFORM archs APPEND "-real")
  list(APPEND archs ${newest})  # a bare number: machine code and PTX
  set(${out} ${archs} PARENT_SCOPE)
endfunction()

# Refuses, naming the variable, an entry that nvcc cannot build (e.g. 52, gone in CUDA 13):
# nvcc's own message comes only at the first .cu file, minutes into the build.
function(tk_cuda_check_architectures variable nvcc)
  tk_cuda_supported_architectures(supported "${nvcc}")
  foreach(entry IN LISTS ${variable})
    if(entry MATCHES "^(all|all-major|native)$")  # CMake's own keywords: CMake checks those
      continue()
    endif()
    string(REGEX REPLACE "-(real|virtual)$" "" arch "${entry}")
    if(NOT arch IN_LIST supported)
      string(REPLACE ";" " " supported "${supported}")
      message(FATAL_ERROR "${variable}: '${entry}' is no architecture ${nvcc} builds (it builds: ${supported})")
    endif()
  endforeach()
endfunction()
