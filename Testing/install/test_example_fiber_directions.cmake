# Install the build tree to a scratch prefix, build Documentation/examples/fiber_directions
# against it as a host application would (find_package(TensorKernels), no build type, so
# the filter's debug-output code is compiled too), run it on the bundled FOD volume and
# compare its peaks with the installed tk-fibers' (same filter settings): the same file.  A
# NIfTI output is 4-D as sh2peaks writes it (10x10x10x9, not ITK's 5-D 10x10x10x1x9 vector
# image): MRtrix3's mrinfo and peaks2amp, where found, read it as peaks.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DMRINFO=... -DPEAKS2AMP=...] -P test_example_fiber_directions.cmake
include(${CMAKE_CURRENT_LIST_DIR}/install_test_util.cmake)

# The installed tk-fibers with the example's filter settings, on input, to output.
function(run_installed_tk_fibers input output)
  execute_process(COMMAND ${WORK_DIR}/prefix/bin/tk-fibers ${input} ${output}
                          --num 3 --relative-threshold 0.1 --backend cpu --quiet
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "the installed tk-fibers failed on ${input} (${rc}): ${err}")
  endif()
endfunction()

# The example built above on input, to output; what it printed in the variable out_var.
function(run_example input output out_var)
  execute_process(COMMAND ${WORK_DIR}/build/fiber_directions ${input} ${output}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "the example failed on ${input} (${rc}):\n${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

install_build_tree_afresh()
configure_and_build(${SOURCE_DIR}/Documentation/examples/fiber_directions ${WORK_DIR}/build ${WORK_DIR}/prefix
                    "the example")
set(input ${SOURCE_DIR}/Data/fibers/small_101D_fod.nii.gz)
run_example(${input} ${WORK_DIR}/example_peaks.nrrd out)
# 600 voxels of DIPY's small_101D; most hold two or three peaks above 10% of their largest.
if(NOT out MATCHES "^600 voxels, ([0-9]+) peaks")
  message(FATAL_ERROR "unexpected summary from the example: ${out}")
endif()
if(CMAKE_MATCH_1 LESS 1200 OR CMAKE_MATCH_1 GREATER 1800)
  message(FATAL_ERROR "the example found ${CMAKE_MATCH_1} peaks in 600 voxels (expected 1200..1800)")
endif()
run_installed_tk_fibers(${input} ${WORK_DIR}/tk_fibers_peaks.nrrd)
# The same peaks, byte for byte.  The headers' space directions differ in their last digits:
# the example's ITK reader computes them from the NIfTI qform in double, tk-fibers reads the
# sform's float32 rows (the NIfTI rule; this file's two agree to float precision).
foreach(file example tk_fibers)
  file(READ ${WORK_DIR}/${file}_peaks.nrrd hex HEX)
  string(FIND "${hex}" "0a0a" header_end)  # the blank line that ends an attached NRRD header
  math(EXPR data_start "${header_end} + 4")
  string(SUBSTRING "${hex}" ${data_start} -1 ${file}_data)
endforeach()
if(header_end LESS 0 OR NOT example_data STREQUAL tk_fibers_data)
  message(FATAL_ERROR "the example's peaks differ from tk-fibers' (${WORK_DIR})")
endif()

# NIfTI: DIPY's small_64D through MRtrix3's dwi2fod (10 x 10 x 10, lmax 8), peaks as 4-D NIfTI.
set(input ${SOURCE_DIR}/Data/fibers/small_64D_fod_mrtrix.nii.gz)
run_example(${input} ${WORK_DIR}/example_peaks.nii nifti_out)
if(MRINFO AND PEAKS2AMP)
  execute_process(COMMAND ${MRINFO} -size ${WORK_DIR}/example_peaks.nii
                  RESULT_VARIABLE rc OUTPUT_VARIABLE size ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc OR NOT size STREQUAL "10 10 10 9")
    message(FATAL_ERROR "mrinfo reads the example's NIfTI peaks as '${size}' (${rc}; expected 10 10 10 9): ${err}")
  endif()
  execute_process(COMMAND ${PEAKS2AMP} -quiet -force ${WORK_DIR}/example_peaks.nii ${WORK_DIR}/example_amp.nii
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out2 ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "MRtrix3's peaks2amp rejects the example's NIfTI peaks (${rc}): ${err}")
  endif()
  execute_process(COMMAND ${MRINFO} -size ${WORK_DIR}/example_amp.nii
                  RESULT_VARIABLE rc OUTPUT_VARIABLE size ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc OR NOT size STREQUAL "10 10 10 3")
    message(FATAL_ERROR "peaks2amp wrote amplitudes of size '${size}' (expected 10 10 10 3): ${err}")
  endif()
else()
  message(STATUS "MRtrix3's mrinfo/peaks2amp not found: the NIfTI layout checked against tk-fibers' only")
endif()
run_installed_tk_fibers(${input} ${WORK_DIR}/tk_fibers_peaks.nii)
# The same voxel data, byte for byte, after the 352-byte header (whose float transforms
# differ in the last bit: ITK's writer derives them from its direction matrix, tk-fibers
# copies the input's).
file(READ ${WORK_DIR}/example_peaks.nii example_data OFFSET 352 HEX)
file(READ ${WORK_DIR}/tk_fibers_peaks.nii tk_fibers_data OFFSET 352 HEX)
if(NOT example_data OR NOT example_data STREQUAL tk_fibers_data)
  message(FATAL_ERROR "the example's NIfTI peaks differ from tk-fibers' (${WORK_DIR})")
endif()
message(STATUS "${out}${nifti_out}")
